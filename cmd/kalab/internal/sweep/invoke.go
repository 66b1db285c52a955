package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/target"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"
	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Options are one kalab sweep: the file, the parameter (and, for a map, a second one), the
// range and how to search it. Check reads the ranges; Open loads the file.
type Options struct {
	File, Param, Range, Run string
	Until, Metric, Out      string
	Resolution, Tolerance   string
	Baseline                string  // a previous sweep.jsonl (or its directory)
	Base                    *Record // the baseline's record, read by Check
	Seeds, Budget, Grid     int     // Seeds and Budget 0: by the run's clock (byClock)
	Tries                   int
	TimeScale, LagTolerance float64
	TimeScaleSet            bool
	// SeedsSet and BudgetSet: the flag was given. 0 is then refused: on the command line it
	// would read as "no runs" or "no limit", not as the clock's default.
	SeedsSet, BudgetSet bool
	// A second parameter makes a map (heat map) over the two grids instead of a search.
	Param2, Range2 string
	Grid2          int
	// AllowExec is which programs the swept file may start, as kalab run's --allow-exec.
	AllowExec    runner.ExecPolicy
	KalabVersion string
	Log          zerolog.Logger
	Host         *runner.Host // the virtual clock's host; nil: the real clock

	lo, hi, res, tol float64
	duration         bool
	lo2, hi2         float64
	duration2        bool
}

// Check validates the options that do not need the file, reads the ranges, and loads the
// baseline.
func (o *Options) Check() error {
	switch {
	case o.Param == "":
		return errors.New("--param is required (e.g. --param client.idle_timeout)")
	case o.Range == "":
		return errors.New("--range is required (e.g. --range 1s..2.5s)")
	case o.SeedsSet && o.Seeds == 0:
		return fmt.Errorf("--seeds 0: give a positive number, or leave --seeds out for the default of the run's clock (%d on the virtual clock, %d on the real one)", VirtualSeeds, RealSeeds)
	case o.BudgetSet && o.Budget == 0:
		return fmt.Errorf("--budget 0: give a positive number, or leave --budget out for the default of the run's clock (%d runs on the virtual clock, %d on the real one)", VirtualBudget, RealBudget)
	case o.Seeds < 0 || o.Seeds > 100:
		return errors.New("--seeds must be between 1 and 100")
	case o.Budget < 0:
		return errors.New("--budget must be at least 1")
	case o.Tries < 1 || o.Tries > 10:
		return errors.New("--tries must be between 1 and 10")
	case o.Grid < 2 || o.Grid > 1000:
		return errors.New("--grid must be between 2 and 1000")
	}
	if err := o.checkTiming(); err != nil {
		return err
	}
	var err error
	if o.lo, o.hi, o.duration, err = parseRange("--range", o.Range); err != nil {
		return err
	}
	if err := o.checkMap(); err != nil {
		return err
	}
	if err := o.steps(); err != nil {
		return err
	}
	if err := report.CheckOut(o.Out); err != nil {
		return fmt.Errorf("--out: %v", err)
	}
	return o.loadBaseline()
}

// checkTiming checks the time scale and the lag tolerance of the runs, and that a
// tolerance comes with a baseline.
func (o *Options) checkTiming() error {
	switch {
	case o.TimeScaleSet && (o.TimeScale <= 0 || o.TimeScale > 100):
		return errors.New("--time-scale must be more than 0 and at most 100")
	case o.LagTolerance < 0 || o.LagTolerance > 1000 || math.IsNaN(o.LagTolerance):
		return errors.New("--lag-tolerance must be between 0 (never noisy) and 1000")
	case o.Tolerance != "" && o.Baseline == "":
		return errors.New("--tolerance needs --baseline")
	}
	return nil
}

// checkMap reads the second parameter's range, when there is one.
func (o *Options) checkMap() error {
	if (o.Param2 == "") != (o.Range2 == "") {
		return errors.New("--param2 and --range2 go together")
	}
	if o.Param2 == "" {
		return nil
	}
	var err error
	if o.lo2, o.hi2, o.duration2, err = parseRange("--range2", o.Range2); err != nil {
		return err
	}
	if o.Grid2 < 2 || o.Grid2 > 1000 || o.Baseline != "" {
		return errors.New("--grid2 must be between 2 and 1000, and a map takes no --baseline")
	}
	return nil
}

// steps reads the resolution and the baseline's tolerance, in the range's unit.
func (o *Options) steps() error {
	o.res = (o.hi - o.lo) / 32
	if o.integer() {
		o.res = 1
	}
	var err error
	if o.Resolution != "" {
		if o.res, err = value(o.Resolution, o.duration); err != nil || o.res <= 0 {
			return fmt.Errorf("--resolution %q: a positive %s", o.Resolution, o.kind())
		}
	}
	o.tol = o.res
	if o.Tolerance != "" {
		if o.tol, err = value(o.Tolerance, o.duration); err != nil {
			return fmt.Errorf("--tolerance: %v", err)
		}
	}
	return nil
}

func (o *Options) loadBaseline() error {
	if o.Baseline == "" {
		return nil
	}
	var err error
	if o.Base, err = LoadRecord(o.Baseline); err != nil {
		return fmt.Errorf("--baseline: %v", err)
	}
	if o.Base.Param != o.Param {
		return fmt.Errorf("--baseline swept %s, not %s", o.Base.Param, o.Param)
	}
	return nil
}

func hasUnit(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && strings.ContainsAny(s[len(s)-1:], "sμunmh")
}

func (o *Options) kind() string {
	if o.duration {
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

func (o *Options) integer() bool {
	return !o.duration && o.lo == math.Trunc(o.lo) && o.hi == math.Trunc(o.hi) &&
		(o.Resolution == "" || o.res == math.Trunc(o.res))
}

// LoadError is a file or a parameter that does not load: Err is the loader's diagnostics
// (a scenario.Diagnostics where it has positions). Flag names the parameter's flag when a
// value of its range is what does not load.
type LoadError struct {
	Flag, Param string
	Err         error
}

func (e *LoadError) Error() string {
	if e.Flag == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v\n%s %s does not load; nothing ran", e.Err, e.Flag, e.Param)
}

func (e *LoadError) Unwrap() error { return e.Err }

// Open loads the file, checks the parameter at both ends of the range, the programs the
// run may start and the deciding check; every error is bad input, found before anything
// runs (a *LoadError where the file or a parameter does not load).
func (o *Options) Open() (*target.Target, error) {
	if o.Until != "" {
		if _, err := check.Compile(o.Until, check.Expect); err != nil {
			return nil, fmt.Errorf("--until: %v", err)
		}
	}
	t, err := target.Open(o.File, o.Param, o.Run, o.Until, o.duration)
	if err != nil {
		return nil, &LoadError{Err: err}
	}
	// The swept run starts the programs it names only as kalab run would (docs/security.md).
	one := &scenario.Plan{Scenarios: []*scenario.Scenario{{Name: t.Base.Scenario, File: o.File, Runs: []*scenario.Run{t.Base}}}}
	if ds := runner.CheckExec(one, o.AllowExec); len(ds) > 0 {
		return nil, &LoadError{Err: ds}
	}
	if err := o.checkEnds(t, o.lo, o.hi); err != nil {
		return nil, &LoadError{Flag: "--param", Param: o.Param, Err: err}
	}
	o.byClock(t)
	if o.Metric == "" {
		o.Metric = deciding(t)
	}
	if !check.IsName(o.Metric) {
		return nil, fmt.Errorf("--metric %q is not a metric (kalab help metrics lists them)", o.Metric)
	}
	return t, nil
}

// Seeds and budget when the flags leave them to the run's clock: on the virtual clock a run
// costs milliseconds and the same seed gives the same result anywhere, so a boundary is
// stated over many seeds; on the real clock each run takes its simulated time.
const (
	VirtualSeeds, VirtualBudget = 20, 2000
	RealSeeds, RealBudget       = 3, 60
)

// byClock fills the seeds and the budget the flags left at 0, by the clock the swept run
// goes on.
func (o *Options) byClock(t *target.Target) {
	seeds, budget := RealSeeds, RealBudget
	if o.compiled(t).Virtual() {
		seeds, budget = VirtualSeeds, VirtualBudget
	}
	if o.Seeds == 0 {
		o.Seeds = seeds
	}
	if o.Budget == 0 {
		o.Budget = budget
	}
}

// compiled is the swept run as it goes: on its clock, at the time scale it runs at (1 on
// the virtual clock, whatever the file's time_scale).
func (o *Options) compiled(t *target.Target) *compile.Run {
	return compile.One(nil, t.Base, runner.Options{Host: o.Host, TimeScale: o.TimeScale}.Compile())
}

// deciding is the first metric the deciding checks read; errors when they read none.
func deciding(t *target.Target) string {
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

// checkEnds loads the target at both ends of a range, with the real-server checks.
func (o *Options) checkEnds(t *target.Target, lo, hi float64) error {
	for _, v := range []float64{lo, hi} {
		plan, err := t.Plan(v)
		if err == nil {
			if ds := runner.Check(plan, runner.CheckOptions{TimeScale: o.TimeScale}); len(ds) > 0 {
				err = ds
			}
		}
		if err == nil && o.TimeScaleSet {
			err = plan.CheckTimeScale(o.TimeScale)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Outcome is how a sweep or a map ended.
type Outcome struct {
	Dir string // sweep-<id>/ under Options.Out
	// Regressed: the safe value moved beyond the tolerance from the baseline's.
	Regressed bool
	// Unsettled says why the sweep cannot speak for the whole range (grid points without a
	// verdict, an interruption); "" when it can. Such a sweep gives no verdict.
	Unsettled string
	// Warnings are what went wrong without stopping the sweep (the table, the plot).
	Warnings []error
}

// InputError is an error of the input found once the sweep began (exit 2).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Invoke runs the sweep (or, with Param2, the map) of t: each run is written to sweep.jsonl
// as it ends; then the table, the sentences and the prediction go to w, the plot beside
// sweep.jsonl, and the closing record last. A nil Outcome comes with an *InputError or an
// error that stopped it before the directory was made; an interrupted sweep returns the
// context's error with its Outcome.
func Invoke(ctx context.Context, o *Options, t *target.Target, w io.Writer) (*Outcome, error) {
	if o.Param2 != "" {
		return o.runMap(ctx, t, w)
	}
	out, jf, err := o.create()
	if err != nil {
		return nil, err
	}
	defer func() { _ = jf.Close() }() // on an early return; closeRecord closes it and says how that went
	enc := json.NewEncoder(jf)
	rec := o.newRecord(t)
	cfg := Config{Lo: o.lo, Hi: o.hi, Resolution: o.res, Seeds: rec.Seeds, Budget: o.Budget, Grid: o.Grid, Integer: o.integer(), MaxTries: o.Tries,
		Probes: rec.Prediction.Probes(o.lo, o.hi, o.res)}
	rn := &Runner{Target: t, Options: o.runOptions(out.Dir), Metric: o.Metric}
	var werr error
	observe := func(s Sample) {
		ev := o.Log.Info().Str("value", t.Format(s.Value)).Int64("seed", s.Seed).Bool("pass", s.Pass).Bool("noisy", s.Noisy)
		if s.HasMetric {
			ev = ev.Float64(o.Metric, s.Metric)
		}
		ev.Msg("run ended")
		if err := enc.Encode(NewSampleLine(s)); err != nil && werr == nil {
			werr = err
		}
	}
	o.Log.Info().Str("param", o.Param).Str("range", o.Range).Int("seeds", o.Seeds).Int("budget", o.Budget).Str("out", out.Dir).Msg("sweep started")
	res, err := Search(ctx, cfg, rn.Run, observe)
	if res == nil {
		return nil, &InputError{err}
	}
	rec.Fill(res, t.Format)
	if !res.Settled() {
		out.Unsettled = gapReason(rec, res, t.Format)
	}
	o.render(out, t, rec, res, w)
	if err == nil && werr != nil {
		err = fmt.Errorf("sweep.jsonl: %w", werr)
	}
	return out, closeRecord(ctx, err, enc, jf, rec)
}

// create makes the sweep's directory under Out and creates its sweep.jsonl, with the modes
// every file kalab writes has.
func (o *Options) create() (*Outcome, *os.File, error) {
	dir := filepath.Join(o.Out, "sweep-"+report.NewRunID(time.Now()))
	if err := os.MkdirAll(dir, atomicfile.DirMode); err != nil {
		return nil, nil, &InputError{fmt.Errorf("--out: %v", err)}
	}
	jf, err := os.OpenFile(filepath.Join(dir, "sweep.jsonl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, atomicfile.Mode)
	if err != nil {
		return nil, nil, err
	}
	return &Outcome{Dir: dir}, jf, nil
}

// runOptions are the runner options of every run a sweep or a map makes, recorded under dir.
func (o *Options) runOptions(dir string) runner.Options {
	opt := runner.Options{Out: filepath.Join(dir, "runs"), KalabVersion: o.KalabVersion, Log: o.Log, LagTolerance: o.LagTolerance, TimeScale: o.TimeScale, Host: o.Host}
	if o.LagTolerance == 0 {
		opt.LagTolerance = -1 // the runner's "off"
	}
	return opt
}

// closing is a sweep's or a map's closing record.
type closing interface{ interrupt() }

func (rec *Record) interrupt()    { rec.Interrupted = true }
func (rec *MapRecord) interrupt() { rec.Interrupted = true }

// closeRecord ends a sweep or a map: its closing record rec is written to sweep.jsonl (f,
// closed here: a failed close is a failed write),
// marked interrupted when ctx ended it (its sentences then say which points have no
// verdict, and a later --baseline refuses it), and the context's error is returned; a
// sweep that failed otherwise writes none.
func closeRecord(ctx context.Context, err error, enc *json.Encoder, f io.Closer, rec closing) error {
	if err != nil && ctx.Err() == nil {
		return err
	}
	if ctx.Err() != nil {
		rec.interrupt()
	}
	werr := enc.Encode(rec)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return errors.Join(ctx.Err(), fmt.Errorf("sweep.jsonl: %v", werr))
	}
	return ctx.Err()
}

// newRecord starts the sweep's record from the options and the file.
func (o *Options) newRecord(t *target.Target) *Record {
	st := t.Base.Settings
	rec := &Record{Record: "sweep", KalabVersion: o.KalabVersion, StartedAt: time.Now().UTC(), File: o.File,
		Scenario: t.Base.Scenario, Run: t.Run, Param: o.Param, Lo: o.lo, Hi: o.hi, Resolution: o.res,
		Budget: o.Budget, Check: o.Until, Metric: o.Metric, Requests: st.Load.Requests}
	if o.duration {
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
	for i := 0; i < o.Seeds; i++ {
		rec.Seeds = append(rec.Seeds, st.Load.Seed+int64(i))
	}
	rec.Context = topology(st, o.Param)
	// The geometry reads the run at the scale it goes at: a box's poll is its scaled
	// timeout's hundredth, read back in scenario time.
	rec.Prediction = geometry.Predict(o.Param, o.compiled(t).Settings, rec.Seeds)
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
	bs := st.Balancers()
	for i, b := range bs {
		who := "balancer"
		if len(bs) > 1 {
			who = fmt.Sprintf("balancer %d of %d", i+1, len(bs))
		}
		own := "balancer."
		if len(bs) > 1 {
			own = fmt.Sprintf("balancer.%d.", i)
		}
		if b.IdleTimeout > 0 && param != own+"idle_timeout" {
			parts = append(parts, fmt.Sprintf("%s closes idle client connections at %s", who, b.IdleTimeout))
		}
		pool := fmt.Sprintf("%s pool idle %s, ", who, b.Backend.IdleTimeout)
		if param == own+"backend.idle_timeout" {
			pool = who + " "
		}
		parts = append(parts, fmt.Sprintf("%sbackend RTT %s", pool, b.BackendNetwork.RTT))
	}
	if boxes := geometry.Boxes(st, param); boxes != "" {
		parts = append(parts, boxes)
	}
	parts = append(parts, fmt.Sprintf("pauses %s", st.Load.Pause))
	return strings.Join(parts, ", ")
}

// render writes the table, the sentences and the prediction, writes the plot, and judges
// the baseline.
func (o *Options) render(out *Outcome, t *target.Target, rec *Record, res *Result, w io.Writer) {
	if err := Table(w, rec, res, t.Format); err != nil {
		out.Warnings = append(out.Warnings, err)
	}
	fmt.Fprintln(w)
	for _, s := range rec.Sentences {
		fmt.Fprintln(w, s)
	}
	if p := rec.Prediction; p != nil {
		fmt.Fprintf(w, "geometry: %s\n", p.Rule)
	}
	fmt.Fprintf(w, "%d runs (budget %d, %d seed%s per point)\n", res.Runs, o.Budget, o.Seeds, plural(o.Seeds))
	out.plot(w, func(pw io.Writer) error { return Plot(pw, rec, t.Format) })
	dir := out.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(w, "results: %s\n", dir)
	if o.Base != nil {
		out.Regressed = o.judge(t, rec, w)
	}
}

// plot writes plot.html beside sweep.jsonl, and says where.
func (out *Outcome) plot(w io.Writer, draw func(io.Writer) error) {
	path := filepath.Join(out.Dir, "plot.html")
	if err := atomicfile.Write(path, draw); err != nil {
		out.Warnings = append(out.Warnings, fmt.Errorf("plot: %v", err))
		return
	}
	fmt.Fprintf(w, "plot: %s\n", path)
}

// judge compares the first boundary's safe value with the baseline's; true when it moved
// beyond the tolerance.
func (o *Options) judge(t *target.Target, rec *Record, w io.Writer) bool {
	base := o.Base
	switch {
	case len(base.Brackets) == 0 && len(rec.Brackets) == 0:
		fmt.Fprintln(w, "baseline: no boundary then, none now")
		return false
	case len(base.Brackets) == 0 || len(rec.Brackets) == 0:
		fmt.Fprintf(w, "baseline: %d boundaries then, %d now: REGRESSED\n", len(base.Brackets), len(rec.Brackets))
		return true
	}
	was, now := base.Brackets[0].Safe, rec.Brackets[0].Safe
	moved := math.Abs(now - was)
	verdict := "ok"
	if moved > o.tol*(1+1e-9) {
		verdict = "REGRESSED"
	}
	fmt.Fprintf(w, "baseline: safe value %s, now %s: moved %s (tolerance %s): %s\n", t.Format(was), t.Format(now), t.Format(moved), t.Format(o.tol), verdict)
	return verdict != "ok"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
