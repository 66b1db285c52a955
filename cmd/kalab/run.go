package main

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// cmdRun is `kalab run`: flags -> plan -> run -> report -> exit code, one step per function.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseRunFlags(args, stderr)
	if !ok {
		return code
	}
	inv, code, ok := prepareRun(f, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	outcome, err := executeRun(ctx, inv, stdout)
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
	fmt.Fprintf(stdout, "\nresults: %s\n", outcome.Dir)
	return runExitCode(f, outcome, missing, err, stderr)
}

// runFlags holds `kalab run`'s parsed flags.
type runFlags struct {
	fs           *pflag.FlagSet
	log          zerolog.Logger
	out          string
	parallel     int
	timeScale    float64
	seed         int64
	filter       string
	noRequests   bool
	baselinePath string
	tolerances   []string
	failMissing  bool
	junitPath    string
	// requireClients: a run whose real client is not installed is an error, not skipped.
	requireClients bool
	// lagTolerance multiplies each run's timing tolerance; 0 measures lateness but never
	// marks a run noisy.
	lagTolerance float64
}

// parseRunFlags reads the flags and checks each on its own; ok is false when the command
// must end with code.
func parseRunFlags(args []string, stderr io.Writer) (f *runFlags, code int, ok bool) {
	fs, lo := flagSet("run", "run [files or dirs...]  (default: scenarios/)", stderr)
	f = &runFlags{fs: fs}
	fs.StringVar(&f.out, "out", "results", "directory that receives <run-id>/results.jsonl and the requests files")
	fs.IntVarP(&f.parallel, "parallel", "p", runner.DefaultParallel, "most runs at once; another starts only while those in flight keep their timing")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "multiply every duration of the plan (0: each file's time_scale)")
	fs.Int64Var(&f.seed, "seed", 0, "override every run's load.seed")
	fs.StringVar(&f.filter, "filter", "", "run only runs whose scenario/variant matches this regular expression")
	fs.BoolVar(&f.noRequests, "no-requests", false, "do not write per-request files")
	fs.StringVar(&f.baselinePath, "baseline", "", "compare each run with the same scenario and variant in this results.jsonl (or run directory); a regression fails the run")
	fs.StringArrayVar(&f.tolerances, "tolerance", nil, "METRIC=TOLERANCE for --baseline, e.g. latency_ms.p50=5%, errors=3 or 'latency_ms.*=off' (repeatable; overrides scenario files)")
	fs.BoolVar(&f.failMissing, "fail-missing", false, "with --baseline: fail when a run of the baseline did not run")
	fs.StringVar(&f.junitPath, "junit", "", "also write a JUnit XML report to this file")
	fs.BoolVar(&f.requireClients, "require-clients", false, "a run whose real client (client.exec) is not installed is an error, not skipped")
	fs.Float64Var(&f.lagTolerance, "lag-tolerance", 1, "multiply the timing tolerance each run derives from its plan; 0 records timer lateness but never marks a run noisy (default from $KALAB_LAG_TOLERANCE, else 1)")
	if ok, code := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	log, err := lo.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return nil, exitInvalid, false
	}
	f.log = log
	invalid := func(format string, a ...any) (*runFlags, int, bool) {
		fmt.Fprintf(stderr, "kalab run: "+format+"\n", a...)
		return nil, exitInvalid, false
	}
	if fs.Changed("time-scale") && (f.timeScale <= 0 || f.timeScale > 100) {
		return invalid("--time-scale must be more than 0 and at most 100")
	}
	if f.parallel < 1 {
		return invalid("--parallel must be at least 1")
	}
	if !fs.Changed("lag-tolerance") {
		if v, set := os.LookupEnv("KALAB_LAG_TOLERANCE"); set {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return invalid("$KALAB_LAG_TOLERANCE: %q is not a number", v)
			}
			f.lagTolerance = x
		}
	}
	if f.lagTolerance < 0 || f.lagTolerance > 1000 || math.IsNaN(f.lagTolerance) {
		return invalid("--lag-tolerance must be between 0 (never noisy) and 1000")
	}
	if (len(f.tolerances) > 0 || f.failMissing) && f.baselinePath == "" {
		return invalid("--tolerance and --fail-missing need --baseline")
	}
	if f.junitPath != "" {
		if err := checkWritableDir(f.junitPath); err != nil {
			return invalid("--junit: %v", err)
		}
	}
	return f, 0, true
}

// invocation is what one `kalab run` executes: the runner's options, the plan and the
// baseline it is judged against (nil without --baseline).
type invocation struct {
	opt  runner.Options
	plan *scenario.Plan
	cmp  *report.Comparer
}

// prepareRun turns the flags into runner options, loads the baseline and the plan.
func prepareRun(f *runFlags, stderr io.Writer) (inv *invocation, code int, ok bool) {
	fail := func(format string, a ...any) (*invocation, int, bool) {
		fmt.Fprintf(stderr, "kalab run: "+format+"\n", a...)
		return nil, exitInvalid, false
	}
	inv = &invocation{opt: runner.Options{Out: f.out, Parallel: f.parallel, KalabVersion: kalabVersion(), Log: f.log, SkipRequests: f.noRequests, RequireClients: f.requireClients}}
	if f.fs.Changed("time-scale") {
		inv.opt.TimeScale = f.timeScale
	}
	inv.opt.LagTolerance = f.lagTolerance
	if f.lagTolerance == 0 {
		inv.opt.LagTolerance = -1 // the runner's "off"
	}
	if f.fs.Changed("seed") {
		inv.opt.Seed = &f.seed
	}
	if f.filter != "" {
		re, err := regexp.Compile(f.filter)
		if err != nil {
			return fail("--filter: %v", err)
		}
		inv.opt.Filter = re
	}
	flagTols, err := parseTolerances(f.tolerances)
	if err != nil {
		return fail("--tolerance %v", err)
	}
	if f.baselinePath != "" {
		base, err := report.LoadBaseline(f.baselinePath)
		if err != nil {
			return fail("%v", err)
		}
		inv.cmp = &report.Comparer{Baseline: base}
	}
	inv.plan, _ = loadPlan(f.fs.Args(), stderr, f.log)
	if inv.plan == nil {
		return nil, exitInvalid, false
	}
	if inv.cmp != nil {
		inv.cmp.Tolerances = report.PlanTolerances(inv.plan, flagTols)
		// Each run is compared as it ends, before its record is written, so that the
		// regressions are in results.jsonl as failed checks of kind baseline.
		inv.opt.Judge = func(rec *report.Run) { inv.cmp.Apply(rec) }
	}
	return inv, 0, true
}

// executeRun runs the plan, with progress bars on a terminal.
func executeRun(ctx context.Context, inv *invocation, stdout io.Writer) (*runner.Outcome, error) {
	var progress *bars
	if isTerminal(stdout) {
		progress = newBars(stdout)
		inv.opt.Observer = progress
	}
	outcome, err := runner.Execute(ctx, inv.plan, inv.opt)
	if progress != nil {
		progress.Wait()
	}
	return outcome, err
}

// reportRun prints the summary and the baseline verdicts, writes annotations and JUnit, and
// returns the baseline runs that did not run.
func reportRun(f *runFlags, inv *invocation, outcome *runner.Outcome, stdout io.Writer) (missing []report.RunDiff, err error) {
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	keep(report.Summary(stdout, outcome.Runs, outcome.Scenarios))
	if cmp := inv.cmp; cmp != nil {
		diffs := make([]report.RunDiff, 0, len(outcome.Runs))
		for _, r := range outcome.Runs {
			diffs = append(diffs, cmp.CompareRun(r))
		}
		if !outcome.Interrupted {
			filter := inv.opt.Filter
			missing = cmp.Baseline.Missing(outcome.Runs, func(sc, v string) bool {
				return filter == nil || filter.MatchString(sc+"/"+v)
			})
		}
		keep(report.BaselineSummary(stdout, cmp.Baseline.Path, append(diffs, missing...), f.failMissing))
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		ws := os.Getenv("GITHUB_WORKSPACE")
		keep(report.Annotations(stdout, outcome.Runs, outcome.Scenarios, ws))
		keep(report.AnnotateMissing(stdout, missing, f.failMissing, ws))
	}
	if f.junitPath != "" {
		in := report.JUnitInput{Runs: outcome.Runs, Scenarios: outcome.Scenarios, Missing: missing, FailMissing: f.failMissing}
		keep(writeJUnit(f.junitPath, in))
	}
	return missing, err
}

// runExitCode maps the outcome to the exit code, most serious first.
func runExitCode(f *runFlags, outcome *runner.Outcome, missing []report.RunDiff, err error, stderr io.Writer) int {
	switch {
	case outcome.Interrupted:
		fmt.Fprintln(stderr, "kalab run: interrupted; the runs that ended are recorded")
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return exitEngine
	case outcome.Errored():
		return exitEngine
	case outcome.Failed():
		return exitCheckFailed
	case f.failMissing && len(missing) > 0:
		fmt.Fprintf(stderr, "kalab run: %d run%s of the baseline did not run (--fail-missing)\n", len(missing), plural(len(missing)))
		return exitCheckFailed
	}
	return exitOK
}

// parseTolerances reads the --tolerance flags.
func parseTolerances(list []string) (map[string]scenario.Tolerance, error) {
	out := map[string]scenario.Tolerance{}
	for _, s := range list {
		set, err := report.ParseToleranceFlag(s)
		if err != nil {
			return nil, err
		}
		for name, t := range set {
			out[name] = t
		}
	}
	return out, nil
}

// checkWritableDir fails early when a report file's directory does not exist, rather than
// after every run has ended.
func checkWritableDir(path string) error {
	st, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Dir(path), unwrapPathErr(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	return nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeJUnit writes the report through a temporary file, so a reader never sees half of it.
func writeJUnit(path string, in report.JUnitInput) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	werr := report.JUnit(f, in)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write JUnit report %s: %w", path, werr)
	}
	return nil
}
