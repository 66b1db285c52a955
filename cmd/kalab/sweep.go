package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep"
)

// cmdSweep is `kalab sweep`: search one parameter of one run for the value where its
// checks start to fail (cmd/kalab/internal/sweep), or map two.
func cmdSweep(args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseSweepFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	t, err := o.Open()
	if err != nil {
		printSweepError(stderr, err)
		return exitInvalid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := sweep.Invoke(ctx, o, t, stdout)
	if out != nil {
		for _, w := range out.Warnings {
			fmt.Fprintf(stderr, "kalab sweep: %v\n", w)
		}
	}
	switch {
	case out != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "kalab sweep: interrupted; the runs that ended are in %s\n", out.Dir)
		return exitInterrupted
	case err != nil:
		printSweepError(stderr, err)
		if errors.As(err, new(*sweep.InputError)) || errors.As(err, new(*sweep.LoadError)) {
			return exitInvalid
		}
		return exitEngine
	case out.Regressed:
		return exitCheckFailed
	case out.Unsettled != "":
		fmt.Fprintf(stderr, "kalab sweep: no verdict over the range: %s\n", out.Unsettled)
		return exitEngine
	}
	return exitOK
}

// printSweepError prints a sweep's error: a file that does not load with its diagnostics.
func printSweepError(stderr io.Writer, err error) {
	var le *sweep.LoadError
	switch {
	case errors.As(err, &le) && le.Flag != "":
		fmt.Fprintf(stderr, "%v\nkalab sweep: %s %s does not load; nothing ran\n", le.Err, le.Flag, le.Param)
	case errors.As(err, &le):
		printDiagnostics(stderr, le.Err)
	default:
		fmt.Fprintf(stderr, "kalab sweep: %v\n", err)
	}
}

func parseSweepFlags(args []string, stdout, stderr io.Writer) (*sweep.Options, int, bool) {
	fs, lo := flagSet("sweep", "sweep FILE --param PATH --range A..B [flags]", stdout, stderr)
	o := &sweep.Options{KalabVersion: kalabVersion(), Host: clockHost}
	fs.StringVar(&o.Param, "param", "", "the field to sweep: client.idle_timeout, server.idle_timeout, balancer.backend.idle_timeout, middlebox.N.idle_timeout (box N of a list, from 0), balancer.N.FIELD (balancer N of a chain), client.max_idle, network.rtt, load.pause.min, client.retry, ...")
	fs.StringVar(&o.Range, "range", "", "the values to search, A..B: durations (1s..2.5s) or numbers (1..20)")
	fs.StringVar(&o.Run, "run", "", "the variant to sweep (needed when the file has more than one run)")
	fs.StringVar(&o.Until, "until", "", "the check that decides a run's verdict, e.g. 'errors == 0' (default: the run's own checks all pass)")
	fs.StringVar(&o.Metric, "metric", "", "the metric shown in the table and the plot (default: the first the deciding check reads)")
	fs.IntVar(&o.Seeds, "seeds", 0, "run each point with this many seeds (the file's load.seed, then the next ones), 1 to 100; left out: 20 on the virtual clock, 3 on the real one")
	fs.StringVar(&o.Resolution, "resolution", "", "stop when the boundary is bracketed this narrowly (default: the range / 32; 1 for whole numbers)")
	fs.IntVar(&o.Budget, "budget", 0, "most runs in all, noisy reruns included, at least 1; left out: 2000 on the virtual clock, 60 on the real one")
	fs.IntVar(&o.Tries, "tries", 2, "sweep runs of one value and seed while they are noisy (each is up to 2 runner attempts) before the point is left without a verdict")
	fs.IntVar(&o.Grid, "grid", 5, "points of the coarse grid, the range's ends included")
	fs.StringVar(&o.Out, "out", "results", "directory that receives sweep-<id>/ (sweep.jsonl, plot.html and the runs' results)")
	fs.Float64Var(&o.TimeScale, "time-scale", 0, "multiply every duration of the runs (0: the file's time_scale)")
	fs.Float64Var(&o.LagTolerance, "lag-tolerance", 1, "as kalab run --lag-tolerance: multiply each run's timing tolerance; 0 judges no run noisy (default from $KALAB_LAG_TOLERANCE, else 1)")
	fs.StringVar(&o.Baseline, "baseline", "", "a previous sweep.jsonl (or its directory): fail when the safe value moved by more than --tolerance")
	fs.StringVar(&o.Tolerance, "tolerance", "", "with --baseline: how far the safe value may move (default: the resolution)")
	fs.StringVar(&o.Param2, "param2", "", "a second field: run the whole grid of both (--grid x --grid2 points) and draw a heat map, no bisection")
	fs.StringVar(&o.Range2, "range2", "", "the second field's values, A..B")
	fs.IntVar(&o.Grid2, "grid2", 5, "points of the second field's grid, the range's ends included")
	allowExec := defineAllowExec(fs)
	if ok, code := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	invalid := func(format string, a ...any) (*sweep.Options, int, bool) {
		fmt.Fprintf(stderr, "kalab sweep: "+format+"\n", a...)
		return nil, exitInvalid, false
	}
	var err error
	if o.Log, err = lo.logger(stderr); err != nil {
		return invalid("%v", err)
	}
	if o.AllowExec, err = execPolicy(fs, *allowExec); err != nil {
		return invalid("%v", err)
	}
	if fs.NArg() != 1 {
		return invalid("give one scenario file (got %d arguments)", fs.NArg())
	}
	o.File = fs.Arg(0)
	o.SeedsSet, o.BudgetSet = fs.Changed("seeds"), fs.Changed("budget")
	o.TimeScaleSet = fs.Changed("time-scale")
	if v, set := os.LookupEnv("KALAB_LAG_TOLERANCE"); set && !fs.Changed("lag-tolerance") {
		if o.LagTolerance, err = strconv.ParseFloat(v, 64); err != nil {
			return invalid("$KALAB_LAG_TOLERANCE: %q is not a number", v)
		}
	}
	if err := o.Check(); err != nil {
		return invalid("%v", err)
	}
	return o, exitOK, true
}
