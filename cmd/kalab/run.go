package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
)

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("run", "run [files or dirs...]  (default: scenarios/)", stderr)
	out := fs.String("out", "results", "directory that receives <run-id>/results.jsonl and the requests files")
	parallel := fs.IntP("parallel", "p", runner.DefaultParallel, "runs at once")
	timeScale := fs.Float64("time-scale", 0, "multiply every duration of the plan (0: each file's time_scale)")
	seed := fs.Int64("seed", 0, "override every run's load.seed")
	filter := fs.String("filter", "", "run only runs whose scenario/variant matches this regular expression")
	noRequests := fs.Bool("no-requests", false, "do not write per-request files")
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
	plan, _ := loadPlan(fs.Args(), stderr, log)
	if plan == nil {
		return exitInvalid
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var progress *bars
	if isTerminal(stdout) {
		progress = newBars(stdout)
		opt.Observer = progress
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
	}
	return exitOK
}
