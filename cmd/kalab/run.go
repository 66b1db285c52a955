package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/gcfloor"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/ci"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/diff"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/outputs"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/shard"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/supervise"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/terminal"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// cmdRun is `kalab run`: flags -> plan -> run -> report -> exit code, one step per function.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseRunFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	inv, code, ok := prepareRun(f, stderr)
	if !ok {
		return code
	}
	if inv.part != nil && inv.plan.Runs() == 0 {
		return emptyShard(inv, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer gcfloor.Hold()() // the runs' CPU, not the collector's (cmd/kalab/internal/gcfloor)
	outcome, err := executeRun(ctx, inv, stdout, f.logSink, f.quiet)
	if outcome == nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		if errors.Is(err, runner.ErrNoRuns) {
			return exitInvalid
		}
		return exitEngine
	}
	missing, rerr := reportRun(f, inv, outcome, stdout)
	if err == nil {
		err = rerr
	}
	// Always say where the results went: --out is relative to the working directory,
	// which need not be the scenarios' project.
	dir := outcome.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(stdout, "\nresults: %s\n", dir)
	if inv := outcome.Invocation; inv != nil && !inv.Completed {
		fmt.Fprintf(stdout, "incomplete: %s\n", inv.Describe())
	}
	return runExitCode(f, outcome, missing, err, stderr)
}

// runFlags holds `kalab run`'s parsed flags.
type runFlags struct {
	fs           *pflag.FlagSet
	name         string // the command, for messages: run, or merge when it gates merged results
	log          zerolog.Logger
	logSink      *logSink // where log lines go; through the progress bars while drawn
	out          string
	parallel     int
	timeScale    float64
	clock        string
	seed         int64
	filter       string
	noRequests   bool
	baselinePath string
	reuseReal    string // --reuse-real: the results whose real-program runs are taken, not run
	tolerances   []string
	failMissing  bool
	allowPartial bool
	files        outputs.Paths // --junit, --html, --metrics
	// requireClients: a run whose real client is not installed is an error, not "not run".
	requireClients bool
	// allowMissing: runs not run because a program they need is missing do not change the
	// exit code (they are still reported).
	allowMissing bool
	allowRemote  bool
	// allowExec is which programs a scenario may start (--allow-exec, $KALAB_ALLOW_EXEC).
	allowExec runner.ExecPolicy
	shardFlags
	// lagTolerance multiplies each run's timing tolerance (derived from its checks); 0 measures lateness but never
	// marks a run noisy.
	lagTolerance float64
	// attempts bounds how often a noisy run is tried (--attempts).
	attempts int
	quiet    bool // --quiet: errors and the final summary only
}

// parseRunFlags reads the flags and checks each on its own; ok is false when the command
// must end with code.
func parseRunFlags(args []string, stdout, stderr io.Writer) (f *runFlags, code int, ok bool) {
	return parseRunFlagsOf("run", "run [files or dirs...]  (default: scenarios/)", args, stdout, stderr)
}

// parseRunFlagsOf is parseRunFlags for a command that takes kalab run's flags (kalab truth),
// its name in messages and its own help.
func parseRunFlagsOf(name, synopsis string, args []string, stdout, stderr io.Writer) (f *runFlags, code int, ok bool) {
	fs, lo := flagSet(name, synopsis, stdout, stderr)
	f = &runFlags{fs: fs, name: name}
	fs.StringVar(&f.out, "out", "results", "directory that receives <run-id>/results.jsonl and the requests files")
	fs.IntVarP(&f.parallel, "parallel", "p", runner.DefaultParallel, "most runs at once; another starts only while those in flight keep their timing (runs on the virtual clock: at most one per core)")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "multiply every duration of the plan (0: each file's time_scale); runs on the virtual clock ignore it")
	fs.StringVar(&f.clock, "clock", "", "run every run that can on this clock: virtual (simulated time, exact) or real (loopback sockets in real time); default: each file's clock, else virtual where every part is modelled (kalab help clocks)")
	fs.Int64Var(&f.seed, "seed", 0, "override every run's load.seed")
	fs.StringVar(&f.filter, "filter", "", "run only runs whose scenario/variant matches this regular expression")
	fs.BoolVar(&f.noRequests, "no-requests", false, "do not write per-request files")
	fs.StringVar(&f.baselinePath, "baseline", "", "compare each run with the same scenario and variant in this results.jsonl (or run directory); a regression fails the run")
	fs.StringVar(&f.reuseReal, "reuse-real", "", "take each run of a real program (client.exec, a real server) from this results.jsonl (or run directory) where it holds a passed run of the same file, variant and settings, instead of running the program again; the modelled runs run (a truth file's model side against recorded real runs)")
	fs.StringArrayVar(&f.tolerances, "tolerance", nil, "METRIC=TOLERANCE for --baseline, e.g. latency_ms.p50=5%, errors=3 or 'latency_ms.*=off' (repeatable; overrides scenario files)")
	fs.BoolVar(&f.failMissing, "fail-missing", false, "with --baseline: fail when a run of the baseline did not run")
	fs.BoolVar(&f.allowPartial, "allow-partial", false, "with --baseline: accept a baseline whose invocation did not complete (interrupted, killed, stopped by an error)")
	fs.StringVar(&f.files.JUnit, "junit", "", "also write a JUnit XML report to this file (a regular file or a new path; replaced whole when the run ends)")
	fs.StringVar(&f.files.HTML, "html", "", "also write the HTML report (kalab report) to this file (a regular file or a new path; replaced whole when the run ends)")
	f.files.DefineMetrics(fs)
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "let a server.url name a host outside loopback (traffic then leaves the machine)")
	allowExec := defineAllowExec(fs)
	if name == "truth" { // kalab truth puts --allow-exec=bundled before the user's flags
		fs.Lookup("allow-exec").DefValue = "bundled"
	}
	fs.IntVar(&f.attempts, "attempts", runner.DefaultAttempts, "how often a noisy run is tried: once among the others, once beside the other reruns, then alone, each rerun once the machine has the headroom its timing needs")
	fs.BoolVar(&f.requireClients, "require-clients", false, "a run whose real client (client.exec) is not installed is an error, not \"not run\"")
	fs.BoolVar(&f.allowMissing, "allow-missing", false, "a run not run because a program it needs is not installed (node, curl, python3-requests, nginx, haproxy, your command) does not make the exit code 3; it is still reported, and its checks are not evaluated (kalab help verdicts)")
	fs.Float64Var(&f.lagTolerance, "lag-tolerance", 1, "multiply the timing tolerance each run derives from the metrics its checks read (docs/timing.md); 0 records timer lateness but never marks a run noisy (default from $KALAB_LAG_TOLERANCE, else 1)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print errors and the final summary only: no progress, no log lines below error (unless --log-level), no table")
	f.shardFlags.define(fs)
	if ok, code := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if f.quiet && !fs.Changed("log-level") {
		lo.level = "error"
	}
	log, err := lo.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return nil, exitInvalid, false
	}
	f.log = log
	f.logSink = lo.sink
	if err := f.check(*allowExec); err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return nil, exitInvalid, false
	}
	return f, 0, true
}

// check checks each flag on its own, before anything runs.
func (f *runFlags) check(allowExec string) error {
	var err error
	if f.allowExec, err = execPolicy(f.fs, allowExec); err != nil {
		return err
	}
	if err := f.checkTiming(); err != nil {
		return err
	}
	if (len(f.tolerances) > 0 || f.failMissing || f.allowPartial) && f.baselinePath == "" {
		return errors.New("--tolerance, --fail-missing and --allow-partial need --baseline")
	}
	if f.reuseReal != "" && f.baselinePath != "" {
		return errors.New("--reuse-real cannot go with --baseline: a reused run was judged in the invocation that ran it")
	}
	// Every output is checked before the first run: a bad path is found now, not after the
	// last run has ended.
	if err := f.files.Check(); err != nil {
		return err
	}
	if err := f.shardFlags.check(); err != nil {
		return err
	}
	if err := report.CheckOut(f.out); err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	return nil
}

// checkTiming checks the flags that set the runs' clock and timing.
func (f *runFlags) checkTiming() error {
	switch {
	case f.fs.Changed("time-scale") && (f.timeScale <= 0 || f.timeScale > 100):
		return errors.New("--time-scale must be more than 0 and at most 100")
	case f.clock != "" && f.clock != scenario.ClockVirtual && f.clock != scenario.ClockReal:
		return fmt.Errorf("--clock %q: want virtual or real", f.clock)
	case f.parallel < 1:
		return errors.New("--parallel must be at least 1")
	case f.attempts < 1 || f.attempts > 10:
		return errors.New("--attempts must be between 1 and 10")
	}
	if v, set := os.LookupEnv("KALAB_LAG_TOLERANCE"); set && !f.fs.Changed("lag-tolerance") {
		var err error
		if f.lagTolerance, err = strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("$KALAB_LAG_TOLERANCE: %q is not a number", v)
		}
	}
	if f.lagTolerance < 0 || f.lagTolerance > 1000 || math.IsNaN(f.lagTolerance) {
		return errors.New("--lag-tolerance must be between 0 (never noisy) and 1000")
	}
	return nil
}

// invocation is what one `kalab run` executes: the runner's options, the plan and the
// baseline it is judged against (nil without --baseline).
type invocation struct {
	opt  runner.Options
	plan *scenario.Plan
	runs []*compile.Run // the plan compiled once, before a shard's split: Execute reads it
	cmp  *baseline.Comparer
	part *shard.Part // with --shard: this part of the split; only its runs are missed
	// paths are the scenario files or directories asked for; nil: the command's arguments
	// (kalab merge takes them from the shards' manifest).
	paths []string
}

// prepareRun turns the flags into runner options, loads the baseline and the plan.
func prepareRun(f *runFlags, stderr io.Writer) (inv *invocation, code int, ok bool) {
	fail := func(format string, a ...any) (*invocation, int, bool) {
		fmt.Fprintf(stderr, "kalab run: "+format+"\n", a...)
		return nil, exitInvalid, false
	}
	inv = &invocation{opt: f.runnerOptions()}
	if f.filter != "" {
		re, err := regexp.Compile(f.filter)
		if err != nil {
			return fail("--filter: %v", err)
		}
		inv.opt.Filter = re
	}
	flagTols, err := gate.ParseToleranceFlags(f.tolerances)
	if err != nil {
		return fail("--tolerance %v", err)
	}
	if inv.cmp, err = baselineComparer(f); err != nil {
		return fail("%v", err)
	}
	if f.reuseReal != "" {
		if inv.opt.Reuse, err = runner.LoadReuse(f.reuseReal); err != nil {
			return fail("--reuse-real: %v", err)
		}
	}
	var files []string
	inv.plan, files, code = loadPlan(f.fs.Args(), stderr, f.log, runner.CheckOptions{AllowRemote: f.allowRemote, TimeScale: inv.opt.TimeScale})
	if inv.plan == nil {
		return nil, code, false
	}
	if inv.opt.TimeScale > 0 {
		// The loader checked each file's durations at its own time scale; the flag's is
		// checked here, before anything runs, with the same positions.
		if err := inv.plan.CheckTimeScale(inv.opt.TimeScale); err != nil {
			printDiagnostics(stderr, err)
			return nil, exitInvalid, false
		}
	}
	inv.runs = compile.Plan(inv.plan, inv.opt.Compile())
	warnUnjudgeable(stderr, inv.runs, inv.opt)
	if f.sharded() {
		if err := applyShard(f, inv, files); err != nil {
			return fail("%v", err)
		}
	}
	if !allowPrograms(f, shard.Filter(inv.plan, inv.opt.Filter), stderr) {
		return nil, exitInvalid, false
	}
	if inv.cmp != nil {
		inv.cmp.Tolerances = diff.PlanTolerances(inv.plan, flagTols)
		// Each run is compared as it ends, before its record is written, so that the
		// regressions are in results.jsonl as failed checks of kind baseline.
		inv.opt.Baseline = inv.cmp
	}
	return inv, 0, true
}

// executeRun runs the plan, with progress bars on a terminal.
func executeRun(ctx context.Context, inv *invocation, stdout io.Writer, logs *logSink, quiet bool) (*runner.Outcome, error) {
	var progress *bars
	if canDrawBars(stdout) && !quiet {
		progress = newBars(stdout)
		inv.opt.Observer = progress
		logs.route(progress.p) // log lines print above the bars, never under a redraw
	}
	inv.opt.Observer = supervise.Faults(inv.opt.Observer)
	outcome, err := runner.ExecuteCompiled(ctx, inv.plan, inv.runs, inv.opt)
	if progress != nil {
		logs.route(nil)
		progress.Wait()
	}
	return outcome, err
}

// reportRun prints the summary and the baseline verdicts, writes annotations and the report
// files asked for (JUnit, HTML, metrics), and returns the baseline runs that did not run.
func reportRun(f *runFlags, inv *invocation, outcome *runner.Outcome, stdout io.Writer) (missing []gate.RunDiff, err error) {
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	summary := terminal.Summary
	if f.quiet {
		summary = terminal.Brief
	}
	keep(summary(stdout, outcome.Runs, outcome.Scenarios))
	if cmp := inv.cmp; cmp != nil {
		// Missing means missing among what was asked for: the selected files (a subset of
		// the suite leaves the other files out), the --filter, and a shard's part of the plan.
		var loaded []string
		for _, sc := range inv.plan.Scenarios {
			loaded = append(loaded, sc.Name)
		}
		paths := inv.paths
		if paths == nil {
			paths = scenarioArgs(f.fs.Args())
		}
		selected, filter, part := diff.Selected(loaded, paths), inv.opt.Filter, inv.part
		var gerr error
		missing, gerr = diff.Gate(stdout, cmp, outcome.Runs, outcome.Interrupted, func(r *report.Run) bool {
			return selected(r) && (filter == nil || filter.MatchString(r.Scenario+"/"+r.Variant)) &&
				(part == nil || part.Mine(r.Scenario, r.Variant))
		}, f.failMissing)
		keep(gerr)
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		ws := os.Getenv("GITHUB_WORKSPACE")
		keep(ci.Annotations(stdout, outcome.Runs, outcome.Scenarios, ws))
		keep(ci.AnnotateMissing(stdout, missing, f.failMissing, ws))
	}
	keep(f.files.Write(stdout, outputs.Input{Dir: outcome.Dir, Runs: outcome.Runs, Scenarios: outcome.Scenarios,
		Missing: missing, FailMissing: f.failMissing, Version: kalabVersion(), Log: f.log}))
	return missing, err
}

// runExitCode maps the outcome to the exit code. A verdict outranks its absence: a failed
// check, a regression or (with --fail-missing) a baseline run missing here exit 1 even when
// other runs have no verdict, and the runs without one are still named; only an
// interruption (130) or an error of kalab's own (3) come first. With no failure, a run
// without a verdict (an error, a run not run here, a compare check the timing left
// unjudged) exits 3.
func runExitCode(f *runFlags, outcome *runner.Outcome, missing []gate.RunDiff, err error, stderr io.Writer) int {
	switch {
	case outcome.Interrupted:
		fmt.Fprintf(stderr, "kalab %s: interrupted; the runs that ended are recorded\n", f.name)
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "kalab %s: %v\n", f.name, err)
		return exitEngine
	}
	noVerdict := noVerdicts(f, outcome, stderr)
	failed := outcome.CheckFailed()
	if f.failMissing && len(missing) > 0 {
		fmt.Fprintf(stderr, "kalab %s: %d run%s of the baseline did not run (--fail-missing)\n", f.name, len(missing), plural(len(missing)))
		failed = true
	}
	switch {
	case failed && noVerdict:
		fmt.Fprintf(stderr, "kalab %s: exit 1: a check failed (the runs above without a verdict would exit 3 alone)\n", f.name)
		return exitCheckFailed
	case failed:
		return exitCheckFailed
	case noVerdict:
		return exitEngine
	}
	return exitOK
}

// noVerdicts reports whether some run or check has no verdict, naming why on stderr: a run
// that ended in error, a run not run here (unless --allow-missing; with --fail-missing it
// is a missing run instead), a compare check the machine's timing left unjudged.
func noVerdicts(f *runFlags, o *runner.Outcome, stderr io.Writer) bool {
	none := o.Errored()
	if nr := o.NotRun(); len(nr) > 0 && !f.allowMissing && !f.failMissing {
		terminal.NotRunHint(stderr, f.name, nr)
		none = true
	}
	if u := o.Unjudged(); len(u) > 0 {
		terminal.UnjudgedHint(stderr, f.name, u)
		none = true
	}
	return none
}

// defineAllowExec defines --allow-exec on fs (kalab run and kalab sweep).
func defineAllowExec(fs *pflag.FlagSet) *string {
	v := fs.String("allow-exec", "none", "start the programs scenario files name (client.exec, server.exec, balancer.exec, server.command): none, bundled (kalab's adapters, servers and balancers only) or all; --allow-exec alone is all (default from $KALAB_ALLOW_EXEC)")
	fs.Lookup("allow-exec").NoOptDefVal = "all"
	return v
}

// execPolicy is the policy --allow-exec gives, or $KALAB_ALLOW_EXEC when the flag is not set.
func execPolicy(fs *pflag.FlagSet, flag string) (runner.ExecPolicy, error) {
	if fs.Changed("allow-exec") {
		p, err := runner.ParseExecPolicy(flag)
		if err != nil {
			return p, fmt.Errorf("--allow-exec %w", err)
		}
		return p, nil
	}
	return runner.ExecPolicyFromEnv()
}

// allowPrograms refuses, before anything runs, the programs of the selected runs that
// --allow-exec does not allow, and logs the ones it does.
func allowPrograms(f *runFlags, selected *scenario.Plan, stderr io.Writer) bool {
	if ds := runner.CheckExec(selected, f.allowExec); len(ds) > 0 {
		printDiagnostics(stderr, ds)
		return false
	}
	for _, p := range runner.Programs(selected) {
		f.log.Debug().Str("run", p.Scenario+"/"+p.Variant).Str("program", p.Command).Str("allowed_by", "--allow-exec="+f.allowExec.String()).Msg("will start a program the scenario names")
	}
	return true
}

// baselineComparer loads --baseline, if given, refusing a partial one unless
// --allow-partial; nil when there is no baseline.
func baselineComparer(f *runFlags) (*baseline.Comparer, error) {
	if f.baselinePath == "" {
		return nil, nil
	}
	base, err := baseline.Load(f.baselinePath)
	if err != nil {
		return nil, err
	}
	if legacy, err := base.Complete(); err != nil && !f.allowPartial {
		return nil, err
	} else if err != nil {
		f.log.Warn().Str("baseline", base.Path).Str("invocation", base.Invocation.Describe()).Msg("comparing with a partial baseline (--allow-partial)")
	} else if legacy {
		f.log.Warn().Str("baseline", base.Path).Msg("the baseline has no invocation record (written by a kalab before invocation records): whether its invocation completed is unknown")
	}
	return &baseline.Comparer{Baseline: base}, nil
}

// runnerOptions are the runner options the flags give.
func (f *runFlags) runnerOptions() runner.Options {
	opt := runner.Options{Out: f.out, Parallel: f.parallel, KalabVersion: kalabVersion(), Log: f.log, SkipRequests: f.noRequests, RequireClients: f.requireClients,
		AllowRemote: f.allowRemote, LagTolerance: f.lagTolerance, Attempts: f.attempts, Clock: f.clock, Host: clockHost}
	// Under the supervising parent the run id is the parent's, so it can close the results
	// of a child that died.
	opt.RunID = supervise.RunID()
	if f.fs.Changed("time-scale") {
		opt.TimeScale = f.timeScale
	}
	if f.lagTolerance == 0 {
		opt.LagTolerance = -1 // the runner's "off"
	}
	if f.fs.Changed("seed") {
		opt.Seed = &f.seed
	}
	return opt
}
