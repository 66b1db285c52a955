package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/flaghint"
	"io"
	"os"
	"runtime/debug"
	"slices"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/ci"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/help"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/logline"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/probecmd"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/supervise"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/validate"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/judge"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/scenarios"
	"github.com/kalab-dev/kalab/schema"
)

// Exit codes (docs/running.md, "Exit codes").
const (
	exitOK          = 0
	exitCheckFailed = 1
	exitInvalid     = 2
	exitEngine      = 3
	exitInterrupted = 130
)

// usage is kalab help: the commands and the exit codes.
var usage = help.Usage

// commands lists the commands Main knows, for did-you-mean.
var commands = []string{"run", "truth", "validate", "diff", "report", "merge", "schema", "version", "help", "completion", "init", "sweep", "explain", "probe"}

// Main is the whole CLI; it returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A panic in this goroutine is a bug in kalab, not bad input: exit 3, with the stack
		// in a file rather than on the terminal. (A crash elsewhere in kalab run is caught
		// by the supervising parent, cmd/kalab/internal/supervise.)
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "kalab: internal error (please report): %v\n", r)
			if f, err := os.CreateTemp("", "kalab-crash-*.txt"); err == nil {
				fmt.Fprintf(f, "panic: %v\n\n%s", r, debug.Stack())
				_ = f.Close() // the report is best effort: the panic is on stderr already
				fmt.Fprintf(stderr, "kalab: the stack is in %s\n", f.Name())
			}
			code = exitEngine
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitInvalid
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return cmdRun(rest, stdout, stderr)
	case "validate":
		return cmdValidate(rest, stdout, stderr)
	case "truth":
		return cmdTruth(rest, stdout, stderr)
	case "diff":
		return cmdDiff(rest, stdout, stderr)
	case "report":
		return cmdReport(rest, stdout, stderr)
	case "merge":
		return cmdMerge(rest, stdout, stderr)
	case "sweep":
		return cmdSweep(rest, stdout, stderr)
	case "explain":
		return cmdExplain(rest, stdout, stderr)
	case "probe": // cmd/kalab/internal/probecmd: flags, the engine call, the printed result
		return probecmd.Main(rest, stdout, stderr)
	case "schema":
		return cmdSchema(rest, stdout, stderr)
	case "version", "--version", "-V":
		return cmdVersion(rest, stdout, stderr)
	case "completion":
		return cmdCompletion(rest, stdout, stderr)
	case "init":
		return cmdInit(rest, stdout, stderr)
	case "help", "-h", "--help":
		return cmdHelp(rest, stdout, stderr)
	}
	hint := ""
	if c := check.Closest(cmd, commands); c != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", c)
	}
	fmt.Fprintf(stderr, "kalab: unknown command %q%s\n\n%s", cmd, hint, usage)
	return exitInvalid
}

// flagSet builds a command's flags with the logging flags every command shares. --help
// prints the usage on stdout (it was asked for); errors go to stderr.
func flagSet(name, synopsis string, stdout, stderr io.Writer) (*pflag.FlagSet, *logOptions) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	lo := &logOptions{}
	fs.StringVar(&lo.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&lo.format, "log-format", "auto", "log format: auto (human on a terminal), text, json")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: kalab %s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
	}
	return fs, lo
}

// parseFlags parses and reports whether to go on; code is the exit code when not.
func parseFlags(fs *pflag.FlagSet, args []string) (ok bool, code int) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return false, exitOK
		}
		fmt.Fprintf(fs.Output(), "kalab %s: %v%s\n", fs.Name(), err, flaghint.For(fs, err))
		fmt.Fprintf(fs.Output(), "Run 'kalab %s --help' for its flags.\n", fs.Name())
		return false, exitInvalid
	}
	return true, exitOK
}

type logOptions struct {
	level, format string
	sink          *logSink // set by logger: where its lines go
}

// logger builds the stderr logger: human-readable on a terminal, JSON on request.
func (o *logOptions) logger(stderr io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(o.level)
	if err != nil || o.level == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: use debug, info, warn or error", o.level)
	}
	var w io.Writer
	// Under the supervisor stderr is a pipe to the parent, which says whether its own
	// stderr is a terminal.
	tty := isTerminal(stderr) || supervise.StderrTTY()
	o.sink = &logSink{w: stderr, tty: tty}
	switch o.format {
	case "json":
		w = o.sink
	case "text":
		w = zerolog.ConsoleWriter{Out: o.sink, NoColor: true, TimeFormat: "15:04:05", FormatFieldValue: logline.Value}
	case "auto":
		w = zerolog.ConsoleWriter{Out: o.sink, NoColor: !tty || !colorAllowed(), TimeFormat: "15:04:05", FormatFieldValue: logline.Value}
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: use auto, text or json", o.format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// scenarioArgs is the files and directories a command was given, scenarios/ by default.
// An argument builtin: names the scenarios embedded in the binary (scenarios.Resolve); one that
// cannot be resolved is kept as given, and fails to load with its name.
func scenarioArgs(args []string) []string {
	paths, _ := scenarios.ResolveArgs(args)
	return paths
}

// loadPlan finds and loads scenario files, printing every diagnostic; a nil plan means
// exit with code: 2, or 3 when the bundled scenarios cannot be written out (an unusable
// TMPDIR). The real servers a plan names are checked too: a field nginx, Node or HAProxy
// cannot express is a load error like any other.
func loadPlan(args []string, stderr io.Writer, log zerolog.Logger, chk runner.CheckOptions) (*scenario.Plan, []string, int) {
	paths, err := scenarios.ResolveArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "kalab: cannot start: %v\n", err)
		return nil, nil, exitEngine
	}
	plan, files, err := validate.Load(paths, chk)
	if files == nil && err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return nil, nil, exitInvalid
	}
	if err != nil {
		printDiagnostics(stderr, err)
		return nil, files, exitInvalid
	}
	log.Debug().Int("files", len(files)).Int("runs", plan.Runs()).Msg("loaded")
	return plan, files, exitOK
}

// warnUnjudgeable prints, before anything runs, each check whose timing tolerance is below
// what its timers reach on a quiet machine (runner.Unjudgeable): the runs go ahead, and
// would end noisy. Runs on the virtual clock are never noisy and are left out. It returns
// how many it printed.
func warnUnjudgeable(stderr io.Writer, runs []*compile.Run, opt runner.Options) int {
	ds := judge.Unjudgeable(compile.RealRuns(runs), opt.TimeScale, opt.LagTolerance)
	for _, d := range ds {
		d.Message = "warning: " + d.Message
		fmt.Fprintln(stderr, d.String())
	}
	if len(ds) > 0 {
		fmt.Fprintf(stderr, "kalab: %d check%s cannot be judged at %s time scale (docs/timing.md)\n", len(ds), plural(len(ds)), map[bool]string{true: "its", false: "their"}[len(ds) == 1])
	}
	return len(ds)
}

// printDiagnostics prints a load error: each diagnostic on its line, then the count.
func printDiagnostics(stderr io.Writer, err error) {
	var ds scenario.Diagnostics
	if errors.As(err, &ds) {
		for _, d := range ds {
			fmt.Fprintln(stderr, d.String())
		}
		fmt.Fprintf(stderr, "kalab: %d problem%s in the input; nothing ran\n", len(ds), plural(len(ds)))
		if os.Getenv("GITHUB_ACTIONS") == "true" {
			// The runner reads workflow commands from stderr as from stdout.
			for _, d := range ds {
				msg := d.Message
				if d.Path != "" {
					msg = d.Path + ": " + msg
				}
				_ = ci.AnnotateProblem(stderr, os.Getenv("GITHUB_WORKSPACE"), d.File, d.Line, d.Col, msg)
			}
		}
		return
	}
	fmt.Fprintf(stderr, "kalab: %v\n", err)
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("validate", "validate [files or dirs...]  (default: scenarios/)", stdout, stderr)
	quiet := fs.BoolP("quiet", "q", false, "print nothing when the input is valid")
	allowRemote := fs.Bool("allow-remote", false, "accept a server.url outside loopback (as kalab run --allow-remote)")
	format := formatFlag(fs, "json: one document on stdout, the problems included (exit 2 still says the input is invalid)")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if !format.valid(stderr, "validate") {
		return exitInvalid
	}
	log, err := lo.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kalab validate: %v\n", err)
		return exitInvalid
	}
	if format.json() {
		paths, err := scenarios.ResolveArgs(fs.Args())
		if err != nil {
			fmt.Fprintf(stderr, "kalab: cannot start: %v\n", err)
			return exitEngine
		}
		doc := validate.NewDocument(paths, runner.CheckOptions{AllowRemote: *allowRemote})
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return exitEngine
		}
		if !doc.Valid {
			return exitInvalid
		}
		return exitOK
	}
	plan, files, code := loadPlan(fs.Args(), stderr, log, runner.CheckOptions{AllowRemote: *allowRemote})
	if plan == nil {
		return code
	}
	vopt := runner.Options{Host: clockHost}
	warnUnjudgeable(stderr, compile.Plan(plan, vopt.Compile()), vopt)
	if !*quiet {
		validate.Summary(stdout, plan, files)
	}
	return exitOK
}

func cmdSchema(args []string, stdout, stderr io.Writer) int {
	fs, _ := flagSet("schema", "schema", stdout, stderr)
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kalab schema: takes no arguments\n")
		return exitInvalid
	}
	if _, err := stdout.Write(schema.Scenario); err != nil {
		fmt.Fprintf(stderr, "kalab schema: %v\n", err)
		return exitEngine
	}
	return exitOK
}

func cmdHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if help.Write(stdout, args[0]) {
		return exitOK
	}
	if slices.Contains(commands, args[0]) {
		return Main([]string{args[0], "--help"}, stdout, stderr)
	}
	hint := ""
	if c := check.Closest(args[0], append(slices.Clone(help.Topics), commands...)); c != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", c)
	}
	fmt.Fprintf(stderr, "kalab help: no help topic %q%s (topics: metrics, presets, clients, servers, verdicts, clocks, or a command)\n", args[0], hint)
	return exitInvalid
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
