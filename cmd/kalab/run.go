package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("run", "run [files or dirs...]  (default: scenarios/)", stderr)
	out := fs.String("out", "results", "directory that receives <run-id>/results.jsonl and the requests files")
	parallel := fs.IntP("parallel", "p", runner.DefaultParallel, "runs at once")
	timeScale := fs.Float64("time-scale", 0, "multiply every duration of the plan (0: each file's time_scale)")
	seed := fs.Int64("seed", 0, "override every run's load.seed")
	filter := fs.String("filter", "", "run only runs whose scenario/variant matches this regular expression")
	noRequests := fs.Bool("no-requests", false, "do not write per-request files")
	baselinePath := fs.String("baseline", "", "compare each run with the same scenario and variant in this results.jsonl (or run directory); a regression fails the run")
	tolFlags := fs.StringArray("tolerance", nil, "METRIC=TOLERANCE for --baseline, e.g. latency_ms.p50=5%, errors=3 or 'latency_ms.*=off' (repeatable; overrides scenario files)")
	failMissing := fs.Bool("fail-missing", false, "with --baseline: fail when a run of the baseline did not run")
	junitPath := fs.String("junit", "", "also write a JUnit XML report to this file")
	allowRemote := fs.Bool("allow-remote", false, "let a server.url name a host outside loopback (traffic then leaves the machine)")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	log, err := lo.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return exitInvalid
	}
	opt := runner.Options{Out: *out, Parallel: *parallel, KalabVersion: kalabVersion(), Log: log, SkipRequests: *noRequests}
	if fs.Changed("time-scale") {
		if *timeScale <= 0 || *timeScale > 100 {
			fmt.Fprintf(stderr, "kalab run: --time-scale must be more than 0 and at most 100\n")
			return exitInvalid
		}
		opt.TimeScale = *timeScale
	}
	if fs.Changed("seed") {
		opt.Seed = seed
	}
	if *parallel < 1 {
		fmt.Fprintf(stderr, "kalab run: --parallel must be at least 1\n")
		return exitInvalid
	}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			fmt.Fprintf(stderr, "kalab run: --filter: %v\n", err)
			return exitInvalid
		}
		opt.Filter = re
	}
	flagTols, err := parseTolerances(*tolFlags)
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: --tolerance %v\n", err)
		return exitInvalid
	}
	if (len(flagTols) > 0 || *failMissing) && *baselinePath == "" {
		fmt.Fprintf(stderr, "kalab run: --tolerance and --fail-missing need --baseline\n")
		return exitInvalid
	}
	if *junitPath != "" {
		if err := checkWritableDir(*junitPath); err != nil {
			fmt.Fprintf(stderr, "kalab run: --junit: %v\n", err)
			return exitInvalid
		}
	}
	var cmp *report.Comparer
	if *baselinePath != "" {
		base, err := report.LoadBaseline(*baselinePath)
		if err != nil {
			fmt.Fprintf(stderr, "kalab run: %v\n", err)
			return exitInvalid
		}
		cmp = &report.Comparer{Baseline: base}
	}
	opt.AllowRemote = *allowRemote
	plan, _ := loadPlan(fs.Args(), stderr, log, runner.CheckOptions{AllowRemote: *allowRemote, TimeScale: opt.TimeScale})
	if plan == nil {
		return exitInvalid
	}
	if cmp != nil {
		cmp.Tolerances = report.PlanTolerances(plan, flagTols)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var progress *bars
	if isTerminal(stdout) {
		progress = newBars(stdout)
		opt.Observer = progress
	}
	if cmp != nil {
		// Each run is compared as it ends, before its record is written, so that the
		// regressions are in results.jsonl as failed checks of kind baseline.
		opt.Judge = func(rec *report.Run) { cmp.Apply(rec) }
	}
	outcome, err := runner.Execute(ctx, plan, opt)
	if progress != nil {
		progress.Wait()
	}
	if outcome == nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		if errors.Is(err, runner.ErrNoRuns) {
			return exitInvalid
		}
		return exitEngine
	}
	if serr := report.Summary(stdout, outcome.Runs, outcome.Scenarios); serr != nil && err == nil {
		err = serr
	}
	var missing []report.RunDiff
	if cmp != nil {
		diffs := make([]report.RunDiff, 0, len(outcome.Runs))
		for _, r := range outcome.Runs {
			diffs = append(diffs, cmp.CompareRun(r))
		}
		if !outcome.Interrupted {
			missing = cmp.Baseline.Missing(outcome.Runs, func(sc, v string) bool {
				return opt.Filter == nil || opt.Filter.MatchString(sc+"/"+v)
			})
		}
		if serr := report.BaselineSummary(stdout, cmp.Baseline.Path, append(diffs, missing...), *failMissing); serr != nil && err == nil {
			err = serr
		}
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		ws := os.Getenv("GITHUB_WORKSPACE")
		if aerr := report.Annotations(stdout, outcome.Runs, outcome.Scenarios, ws); aerr != nil && err == nil {
			err = aerr
		}
		if aerr := report.AnnotateMissing(stdout, missing, *failMissing, ws); aerr != nil && err == nil {
			err = aerr
		}
	}
	if *junitPath != "" {
		in := report.JUnitInput{Runs: outcome.Runs, Scenarios: outcome.Scenarios, Missing: missing, FailMissing: *failMissing}
		if jerr := writeJUnit(*junitPath, in); jerr != nil && err == nil {
			err = jerr
		}
	}
	fmt.Fprintf(stdout, "\nresults: %s\n", outcome.Dir)
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
	case *failMissing && len(missing) > 0:
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
