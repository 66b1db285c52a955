package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/sweep"
)

// sweepFlags holds `kalab sweep`'s parsed flags.
type sweepFlags struct {
	log                    zerolog.Logger
	file, param, rng, run  string
	until, metric, out     string
	resolution, tolerance  string
	baseline               string
	base                   *sweep.Record // the --baseline record, read before anything runs
	seeds, budget, grid    int
	tries                  int
	timeScale, lagTolerate float64
	timeScaleSet           bool
	lo, hi, res, tol       float64
	duration               bool
	// A second parameter makes a map (heat map) over the two grids instead of a search.
	param2, rng2 string
	grid2        int
	lo2, hi2     float64
	duration2    bool
	// allowExec is which programs the swept file may start, as kalab run's --allow-exec.
	allowExec runner.ExecPolicy
}

// cmdSweep is `kalab sweep`: search one parameter of one run for the value where its
// checks start to fail.
func cmdSweep(args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseSweepFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	t, code, ok := openSweep(f, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.param2 != "" {
		return runMap(ctx, f, t, stdout, stderr)
	}
	return runSweep(ctx, f, t, stdout, stderr)
}

func parseSweepFlags(args []string, stdout, stderr io.Writer) (*sweepFlags, int, bool) {
	fs, lo := flagSet("sweep", "sweep FILE --param PATH --range A..B [flags]", stdout, stderr)
	f := &sweepFlags{}
	fs.StringVar(&f.param, "param", "", "the field to sweep: client.idle_timeout, server.idle_timeout, balancer.backend.idle_timeout, client.max_idle, network.rtt, load.pause.min, client.retry, ...")
	fs.StringVar(&f.rng, "range", "", "the values to search, A..B: durations (1s..2.5s) or numbers (1..20)")
	fs.StringVar(&f.run, "run", "", "the variant to sweep (needed when the file has more than one run)")
	fs.StringVar(&f.until, "until", "", "the check that decides a run's verdict, e.g. 'errors == 0' (default: the run's own checks all pass)")
	fs.StringVar(&f.metric, "metric", "", "the metric shown in the table and the plot (default: the first the deciding check reads)")
	fs.IntVar(&f.seeds, "seeds", 3, "run each point with this many seeds (the file's load.seed, then the next ones)")
	fs.StringVar(&f.resolution, "resolution", "", "stop when the boundary is bracketed this narrowly (default: the range / 32; 1 for whole numbers)")
	fs.IntVar(&f.budget, "budget", 60, "most runs in all, noisy reruns included")
	fs.IntVar(&f.tries, "tries", 2, "sweep runs of one value and seed while they are noisy (each is up to 2 runner attempts) before the point is left without a verdict")
	fs.IntVar(&f.grid, "grid", 5, "points of the coarse grid, the range's ends included")
	fs.StringVar(&f.out, "out", "results", "directory that receives sweep-<id>/ (sweep.jsonl, plot.html and the runs' results)")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "multiply every duration of the runs (0: the file's time_scale)")
	fs.Float64Var(&f.lagTolerate, "lag-tolerance", 1, "as kalab run --lag-tolerance: multiply each run's timing tolerance; 0 judges no run noisy (default from $KALAB_LAG_TOLERANCE, else 1)")
	fs.StringVar(&f.baseline, "baseline", "", "a previous sweep.jsonl (or its directory): fail when the safe value moved by more than --tolerance")
	fs.StringVar(&f.tolerance, "tolerance", "", "with --baseline: how far the safe value may move (default: the resolution)")
	fs.StringVar(&f.param2, "param2", "", "a second field: run the whole grid of both (--grid x --grid2 points) and draw a heat map, no bisection")
	fs.StringVar(&f.rng2, "range2", "", "the second field's values, A..B")
	fs.IntVar(&f.grid2, "grid2", 5, "points of the second field's grid, the range's ends included")
	allowExec := defineAllowExec(fs)
	if ok, code := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	invalid := func(format string, a ...any) (*sweepFlags, int, bool) {
		fmt.Fprintf(stderr, "kalab sweep: "+format+"\n", a...)
		return nil, exitInvalid, false
	}
	log, err := lo.logger(stderr)
	if err != nil {
		return invalid("%v", err)
	}
	f.log = log
	if f.allowExec, err = execPolicy(fs, *allowExec); err != nil {
		return invalid("%v", err)
	}
	if fs.NArg() != 1 {
		return invalid("give one scenario file (got %d arguments)", fs.NArg())
	}
	f.file = fs.Arg(0)
	f.timeScaleSet = fs.Changed("time-scale")
	if v, set := os.LookupEnv("KALAB_LAG_TOLERANCE"); set && !fs.Changed("lag-tolerance") {
		if f.lagTolerate, err = strconv.ParseFloat(v, 64); err != nil {
			return invalid("$KALAB_LAG_TOLERANCE: %q is not a number", v)
		}
	}
	if err := f.check(); err != nil {
		return invalid("%v", err)
	}
	if err := report.CheckOut(f.out); err != nil {
		return invalid("--out: %v", err)
	}
	if f.baseline != "" {
		if f.base, err = sweep.LoadRecord(f.baseline); err != nil {
			return invalid("--baseline: %v", err)
		}
		if f.base.Param != f.param {
			return invalid("--baseline swept %s, not %s", f.base.Param, f.param)
		}
	}
	return f, exitOK, true
}

// check validates the flags that do not need the file.
func (f *sweepFlags) check() error {
	switch {
	case f.param == "":
		return errors.New("--param is required (e.g. --param client.idle_timeout)")
	case f.rng == "":
		return errors.New("--range is required (e.g. --range 1s..2.5s)")
	case f.seeds < 1 || f.seeds > 100:
		return errors.New("--seeds must be between 1 and 100")
	case f.budget < 1:
		return errors.New("--budget must be at least 1")
	case f.tries < 1 || f.tries > 10:
		return errors.New("--tries must be between 1 and 10")
	case f.grid < 2 || f.grid > 1000:
		return errors.New("--grid must be between 2 and 1000")
	case f.timeScaleSet && (f.timeScale <= 0 || f.timeScale > 100):
		return errors.New("--time-scale must be more than 0 and at most 100")
	case f.lagTolerate < 0 || f.lagTolerate > 1000 || math.IsNaN(f.lagTolerate):
		return errors.New("--lag-tolerance must be between 0 (never noisy) and 1000")
	case f.tolerance != "" && f.baseline == "":
		return errors.New("--tolerance needs --baseline")
	}
	var err error
	if f.lo, f.hi, f.duration, err = parseRange("--range", f.rng); err != nil {
		return err
	}
	if (f.param2 == "") != (f.rng2 == "") {
		return errors.New("--param2 and --range2 go together")
	}
	if f.param2 != "" {
		if f.lo2, f.hi2, f.duration2, err = parseRange("--range2", f.rng2); err != nil {
			return err
		}
		if f.grid2 < 2 || f.grid2 > 1000 || f.baseline != "" {
			return errors.New("--grid2 must be between 2 and 1000, and a map takes no --baseline")
		}
	}
	f.res = (f.hi - f.lo) / 32
	if f.integer() {
		f.res = 1
	}
	if f.resolution != "" {
		if f.res, err = f.value(f.resolution); err != nil || f.res <= 0 {
			return fmt.Errorf("--resolution %q: a positive %s", f.resolution, f.kind())
		}
	}
	f.tol = f.res
	if f.tolerance != "" {
		if f.tol, err = f.value(f.tolerance); err != nil {
			return fmt.Errorf("--tolerance: %v", err)
		}
	}
	return nil
}

func hasUnit(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && strings.ContainsAny(s[len(s)-1:], "sμunmh")
}

func (f *sweepFlags) kind() string {
	if f.duration {
		return "duration (e.g. 50ms)"
	}
	return "number"
}

// parseRange reads A..B: durations (in seconds) when either end has a unit, else numbers.
func parseRange(flag, s string) (lo, hi float64, duration bool, err error) {
	a, b, found := strings.Cut(s, "..")
	if !found {
		return 0, 0, false, fmt.Errorf("%s %q: write A..B, e.g. 1s..2.5s", flag, s)
	}
	duration = hasUnit(a) || hasUnit(b)
	if lo, err = value(a, duration); err != nil {
		return 0, 0, false, fmt.Errorf("%s: %v", flag, err)
	}
	if hi, err = value(b, duration); err != nil {
		return 0, 0, false, fmt.Errorf("%s: %v", flag, err)
	}
	if !(lo < hi) {
		return 0, 0, false, fmt.Errorf("%s %q: the first value must be below the second", flag, s)
	}
	return lo, hi, duration, nil
}

// value reads a duration (as seconds) or a number.
func (f *sweepFlags) value(s string) (float64, error) { return value(s, f.duration) }

func value(s string, duration bool) (float64, error) {
	s = strings.TrimSpace(s)
	if duration {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a duration (use e.g. 1500ms or 2.5s, the same kind at both ends)", s)
		}
		return d.Seconds(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q is not a number (or give both ends as durations)", s)
	}
	return v, nil
}

func (f *sweepFlags) integer() bool {
	return !f.duration && f.lo == math.Trunc(f.lo) && f.hi == math.Trunc(f.hi) &&
		(f.resolution == "" || f.res == math.Trunc(f.res))
}

// openSweep loads the file, checks the parameter at both ends of the range and the
// deciding check; every problem is exit 2 before anything runs.
func openSweep(f *sweepFlags, stderr io.Writer) (*sweep.Target, int, bool) {
	if f.until != "" {
		if _, err := check.Compile(f.until, check.Expect); err != nil {
			fmt.Fprintf(stderr, "kalab sweep: --until: %v\n", err)
			return nil, exitInvalid, false
		}
	}
	t, err := sweep.Open(f.file, f.param, f.run, f.until, f.duration)
	if err != nil {
		printDiagnostics(stderr, err)
		return nil, exitInvalid, false
	}
	// The swept run starts the programs it names only as kalab run would (docs/security.md).
	one := &scenario.Plan{Scenarios: []*scenario.Scenario{{Name: t.Base.Scenario, File: f.file, Runs: []*scenario.Run{t.Base}}}}
	if ds := runner.CheckExec(one, f.allowExec); len(ds) > 0 {
		printDiagnostics(stderr, ds)
		return nil, exitInvalid, false
	}
	if err := checkEnds(f, t, f.lo, f.hi); err != nil {
		fmt.Fprintf(stderr, "%v\nkalab sweep: --param %s does not load; nothing ran\n", err, f.param)
		return nil, exitInvalid, false
	}
	if f.metric == "" {
		f.metric = deciding(t)
	}
	if !check.IsName(f.metric) {
		fmt.Fprintf(stderr, "kalab sweep: --metric %q is not a metric (kalab help metrics lists them)\n", f.metric)
		return nil, exitInvalid, false
	}
	return t, exitOK, true
}

// deciding is the first metric the deciding checks read; errors when they read none.
func deciding(t *sweep.Target) string {
	if t.Until != "" {
		if a, err := check.Compile(t.Until, check.Expect); err == nil && len(a.Refs()) > 0 {
			return a.Refs()[0].Metric
		}
		return "errors"
	}
	for _, a := range t.Base.Expect {
		if refs := a.Refs(); len(refs) > 0 {
			return refs[0].Metric
		}
	}
	return "errors"
}

// runSweep searches, writing each run to sweep.jsonl as it ends, then prints the table,
// the boundary and the prediction, and writes the plot.
func runSweep(ctx context.Context, f *sweepFlags, t *sweep.Target, stdout, stderr io.Writer) int {
	dir, jf, code, ok := sweepOutput(f.out, stderr)
	if !ok {
		return code
	}
	defer jf.Close()
	enc := json.NewEncoder(jf)
	rec := newRecord(f, t)
	cfg := sweep.Config{Lo: f.lo, Hi: f.hi, Resolution: f.res, Seeds: rec.Seeds, Budget: f.budget, Grid: f.grid, Integer: f.integer(), MaxTries: f.tries}
	opt := f.runOptions(dir)
	rn := &sweep.Runner{Target: t, Options: opt, Metric: f.metric}
	var werr error
	observe := func(s sweep.Sample) {
		ev := f.log.Info().Str("value", t.Format(s.Value)).Int64("seed", s.Seed).Bool("pass", s.Pass).Bool("noisy", s.Noisy)
		if s.HasMetric {
			ev = ev.Float64(f.metric, s.Metric)
		}
		ev.Msg("run ended")
		if err := enc.Encode(sweep.NewSampleLine(s)); err != nil && werr == nil {
			werr = err
		}
	}
	f.log.Info().Str("param", f.param).Str("range", f.rng).Int("seeds", f.seeds).Int("budget", f.budget).Str("out", dir).Msg("sweep started")
	res, err := sweep.Search(ctx, cfg, rn.Run, observe)
	if res == nil {
		fmt.Fprintf(stderr, "kalab sweep: %v\n", err)
		return exitInvalid
	}
	rec.Fill(res, t.Format)
	code = reportSweep(f, t, rec, res, dir, stdout, stderr)
	if err == nil && werr != nil {
		err = fmt.Errorf("sweep.jsonl: %w", werr)
	}
	return closeSweep(ctx, err, enc, rec, dir, code, stderr)
}

// sweepOutput makes the sweep's directory under out and creates its sweep.jsonl, with the
// modes every file kalab writes has (engine/atomicfile).
func sweepOutput(out string, stderr io.Writer) (dir string, jf *os.File, code int, ok bool) {
	dir = filepath.Join(out, "sweep-"+report.NewRunID(time.Now()))
	if err := os.MkdirAll(dir, atomicfile.DirMode); err != nil {
		fmt.Fprintf(stderr, "kalab sweep: --out: %v\n", err)
		return "", nil, exitInvalid, false
	}
	jf, err := os.OpenFile(filepath.Join(dir, "sweep.jsonl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, atomicfile.Mode)
	if err != nil {
		fmt.Fprintf(stderr, "kalab sweep: %v\n", err)
		return "", nil, exitEngine, false
	}
	return dir, jf, exitOK, true
}

// runOptions are the runner options of every run a sweep or a map makes, recorded under dir.
func (f *sweepFlags) runOptions(dir string) runner.Options {
	opt := runner.Options{Out: filepath.Join(dir, "runs"), KalabVersion: kalabVersion(), Log: f.log, LagTolerance: f.lagTolerate, TimeScale: f.timeScale, Host: clockHost}
	if f.lagTolerate == 0 {
		opt.LagTolerance = -1 // the runner's "off"
	}
	return opt
}

// closeSweep ends a sweep or a map: interrupted, failed, or with its closing record rec
// written to sweep.jsonl and code (the verdict so far) returned.
func closeSweep(ctx context.Context, err error, enc *json.Encoder, rec any, dir string, code int, stderr io.Writer) int {
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "kalab sweep: interrupted; the runs that ended are in %s\n", dir)
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "kalab sweep: %v\n", err)
		return exitEngine
	}
	if err := enc.Encode(rec); err != nil {
		fmt.Fprintf(stderr, "kalab sweep: sweep.jsonl: %v\n", err)
		return exitEngine
	}
	return code
}

// newRecord starts the sweep's record from the flags and the file.
func newRecord(f *sweepFlags, t *sweep.Target) *sweep.Record {
	st := t.Base.Settings
	rec := &sweep.Record{Record: "sweep", KalabVersion: kalabVersion(), StartedAt: time.Now().UTC(), File: f.file,
		Scenario: t.Base.Scenario, Run: t.Run, Param: f.param, Lo: f.lo, Hi: f.hi, Resolution: f.res,
		Budget: f.budget, Check: f.until, Metric: f.metric, Requests: st.Load.Requests}
	if f.duration {
		rec.Unit = "s"
	}
	if rec.Check == "" {
		var srcs []string
		for _, a := range t.Base.Expect {
			srcs = append(srcs, a.Source)
		}
		rec.Check = strings.Join(srcs, " and ")
		if rec.Check == "" {
			rec.Check = "the run's checks"
		}
	}
	for i := 0; i < f.seeds; i++ {
		rec.Seeds = append(rec.Seeds, st.Load.Seed+int64(i))
	}
	rec.Context = topology(st, f.param)
	rec.Prediction = sweep.Predict(f.param, st, rec.Seeds)
	return rec
}

// topology says the settings the boundary depends on, in a few words (the swept one left
// out: its file value is not what ran).
func topology(st scenario.Settings, param string) string {
	var parts []string
	if st.Server.IdleTimeout > 0 && param != "server.idle_timeout" {
		parts = append(parts, fmt.Sprintf("server closes idle connections at %s", st.Server.IdleTimeout))
	}
	if param != "network.rtt" {
		parts = append(parts, "RTT "+st.Network.RTT.String())
	}
	if b := st.Balancer; b != nil {
		parts = append(parts, fmt.Sprintf("balancer pool idle %s, backend RTT %s", b.Backend.IdleTimeout, b.BackendNetwork.RTT))
	}
	parts = append(parts, fmt.Sprintf("pauses %s", st.Load.Pause))
	return strings.Join(parts, ", ")
}

// reportSweep prints the table, the sentences and the prediction, writes the plot, and
// judges the baseline; it returns exit 1 when the safe value moved beyond the tolerance.
func reportSweep(f *sweepFlags, t *sweep.Target, rec *sweep.Record, res *sweep.Result, dir string, stdout, stderr io.Writer) int {
	if err := sweep.Table(stdout, rec, res, t.Format); err != nil {
		fmt.Fprintf(stderr, "kalab sweep: %v\n", err)
	}
	fmt.Fprintln(stdout)
	for _, s := range rec.Sentences {
		fmt.Fprintln(stdout, s)
	}
	if p := rec.Prediction; p != nil {
		fmt.Fprintf(stdout, "geometry: %s\n", p.Rule)
	}
	fmt.Fprintf(stdout, "%d runs (budget %d, %d seed%s per point)\n", res.Runs, f.budget, f.seeds, plural(f.seeds))
	plot := filepath.Join(dir, "plot.html")
	if err := atomicfile.Write(plot, func(w io.Writer) error { return sweep.Plot(w, rec, t.Format) }); err != nil {
		fmt.Fprintf(stderr, "kalab sweep: plot: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "plot: %s\n", plot)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(stdout, "results: %s\n", dir)
	if f.baseline == "" {
		return exitOK
	}
	return judgeSweep(f, t, rec, stdout, stderr)
}

// judgeSweep compares the first boundary's safe value with the baseline's.
func judgeSweep(f *sweepFlags, t *sweep.Target, rec *sweep.Record, stdout, stderr io.Writer) int {
	base := f.base
	switch {
	case len(base.Brackets) == 0 && len(rec.Brackets) == 0:
		fmt.Fprintln(stdout, "baseline: no boundary then, none now")
		return exitOK
	case len(base.Brackets) == 0 || len(rec.Brackets) == 0:
		fmt.Fprintf(stdout, "baseline: %d boundaries then, %d now: REGRESSED\n", len(base.Brackets), len(rec.Brackets))
		return exitCheckFailed
	}
	was, now := base.Brackets[0].Safe, rec.Brackets[0].Safe
	moved := math.Abs(now - was)
	verdict := "ok"
	if moved > f.tol*(1+1e-9) {
		verdict = "REGRESSED"
	}
	fmt.Fprintf(stdout, "baseline: safe value %s, now %s: moved %s (tolerance %s): %s\n", t.Format(was), t.Format(now), t.Format(moved), t.Format(f.tol), verdict)
	if verdict != "ok" {
		return exitCheckFailed
	}
	return exitOK
}
