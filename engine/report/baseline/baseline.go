package baseline

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/internal/tolerance"
	"github.com/kalab-dev/kalab/engine/numtext"
	"github.com/kalab-dev/kalab/engine/report"
)

// Tolerances layers the tolerance overrides on the defaults: a scenario file's baseline:
// block overrides the defaults, and a --tolerance flag overrides both, as a command line
// overrides configuration.
type Tolerances struct {
	Flags     map[string]tolerance.Tolerance
	Scenarios map[string]ScenarioTolerances // by scenario name
}

// ScenarioTolerances are one scenario file's overrides.
type ScenarioTolerances struct {
	File  string
	Rules map[string]tolerance.Tolerance
}

// Rule returns the rule that applies to a metric of a scenario.
func (t *Tolerances) Rule(scenarioName, metric string) gate.Rule {
	r, _ := gate.DefaultRule(metric)
	if t == nil {
		return r
	}
	if st, ok := t.Scenarios[scenarioName]; ok {
		if tol, ok := st.Rules[metric]; ok {
			r.Tolerance, r.Source = tol, st.File
		}
	}
	if tol, ok := t.Flags[metric]; ok {
		r.Tolerance, r.Source = tol, "flag"
	}
	if r.Worse == gate.Informational && r.Source != "default" {
		// A metric with no better direction (tls_resumed): a tolerance bounds any change.
		r.Worse = gate.AnyChange
	}
	return r
}

// Baseline is a results.jsonl of an earlier run that later runs are compared with.
type Baseline struct {
	Path string
	Runs []report.Run
	// Invocation is the file's closing invocation record; nil for a file written before
	// kalab recorded invocations (its completeness is unknown, see Complete).
	Invocation *report.Invocation
	index      map[string]int
}

// Complete returns nil when the baseline's invocation ran every planned run to its end. A
// file without an invocation record (written by an older kalab, like a baseline committed
// before them) is accepted: legacy is then true and the caller should say that its
// completeness is unknown. A partial baseline is an error the caller may waive
// (--allow-partial): a Ctrl-C'd or killed run would otherwise pass for the whole suite.
func (b *Baseline) Complete() (legacy bool, err error) {
	switch inv := b.Invocation; {
	case inv == nil:
		return true, nil
	case !inv.Completed:
		return false, &Error{Path: b.Path, Err: fmt.Errorf("is from an invocation that did not complete (%s); use a complete run, or pass --allow-partial to compare with the runs it has", inv.Describe())}
	}
	return false, nil
}

// Error is bad baseline input: a file that cannot be read as kalab results.
type Error struct {
	Path string
	Err  error
}

// Error names the baseline file and what is wrong with it.
func (e *Error) Error() string {
	return fmt.Sprintf("baseline %s: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Load reads a results.jsonl (or a run directory holding one) as a baseline. It rejects
// lines that are not JSON, that break schema/result.schema.json or that carry another
// record version, a file without runs, and a scenario/variant seen twice; every such
// error is an *Error.
func Load(path string) (*Baseline, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "results.jsonl")
	}
	// A FIFO or a device would block the read or never end: refuse it before opening.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, &Error{Path: path, Err: fmt.Errorf("is not a regular file (%s); a baseline is a results.jsonl file", st.Mode().Type())}
	}
	res, err := report.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		} else {
			err = fmt.Errorf("line %w", trimPathPrefix(err, path))
		}
		return nil, &Error{Path: path, Err: err}
	}
	if len(res.Runs) == 0 {
		return nil, &Error{Path: path, Err: errors.New("holds no run records; write a baseline with kalab run --out DIR and copy DIR/latest/results.jsonl")}
	}
	if err := report.ValidateResults(path); err != nil {
		return nil, &Error{Path: path, Err: fmt.Errorf("does not match schema/result.schema.json: line %w", trimPathPrefix(err, path))}
	}
	b := &Baseline{Path: path, Runs: res.Runs, Invocation: res.Invocation, index: make(map[string]int, len(res.Runs))}
	for i, r := range res.Runs {
		if err := physical(r); err != nil {
			return nil, &Error{Path: path, Err: fmt.Errorf("line %d: run %s / %s: %w", r.Line(), r.Scenario, r.Variant, err)}
		}
		k := runKey(r.Scenario, r.Variant)
		if _, dup := b.index[k]; dup {
			return nil, &Error{Path: path, Err: fmt.Errorf("run %s / %s appears twice; a baseline is the results of one invocation", r.Scenario, r.Variant)}
		}
		b.index[k] = i
	}
	return b, nil
}

// maxMs is the longest time a time.Duration holds, in milliseconds.
const maxMs = float64(math.MaxInt64) / 1e6

// physical rejects metric values no run can produce: a negative or fractional count, a
// ratio outside 0..1, a time longer than a time.Duration can hold (in scenario time). Such
// a value is a hand-edited or corrupt baseline, and would otherwise print as a 309-digit
// number and a -Inf% change.
func physical(r report.Run) error {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	scale := r.TimeScale
	if scale <= 0 {
		scale = 1
	}
	flat := r.Metrics.Flat()
	names := make([]string, 0, len(flat))
	for n := range flat {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := flat[n]
		lo, hi, integral := 0.0, float64(1<<53), true
		switch {
		case n == "reuse_ratio":
			hi, integral = 1, false
		case n == "errors_per_1000":
			hi, integral = 1000, false
		case strings.Contains(n, "_ms.") || strings.HasSuffix(n, "_ms"): // latency_ms.p50, lag_ms.link.p99, server_idle_close_ms.max, total_ms
			hi, integral = maxMs/scale, false
		case n == "cpu_us_per_request":
			hi, integral = maxMs*1000, false
		case n == "rps", n == "peak_rss_mb":
			// A billion requests a second on loopback, or a petabyte of memory, is not a run.
			hi, integral = 1e9, false
		}
		switch {
		case math.IsNaN(v) || v < lo || v > hi:
			return fmt.Errorf("%s = %s is outside its possible range %s..%s", n, g(v), g(lo), g(hi))
		case integral && v != math.Trunc(v):
			return fmt.Errorf("%s = %s is a count and must be a whole number", n, g(v))
		}
	}
	return nil
}

// trimPathPrefix drops the "path:" that report.ReadFile and report.ValidateResults put first, so the message
// can say "line N" instead.
func trimPathPrefix(err error, path string) error {
	return errors.New(strings.TrimPrefix(err.Error(), path+":"))
}

// Run returns the baseline run of a scenario and variant, or nil.
func (b *Baseline) Run(scenarioName, variant string) *report.Run {
	if i, ok := b.index[runKey(scenarioName, variant)]; ok {
		return &b.Runs[i]
	}
	return nil
}

func runKey(s, v string) string { return s + "\x00" + v }

// Comparer compares runs with a baseline under a set of tolerances. It only reads its
// fields, so runs may be compared from several goroutines at once.
type Comparer struct {
	Baseline   *Baseline
	Tolerances *Tolerances
}

// CompareRun compares one run with its baseline run.
func (c *Comparer) CompareRun(cur *report.Run) gate.RunDiff {
	d := gate.RunDiff{Scenario: cur.Scenario, Variant: cur.Variant, File: cur.File}
	old := c.Baseline.Run(cur.Scenario, cur.Variant)
	if old == nil {
		d.State = gate.StateNew
		return d
	}
	d.BaselineRunID = old.RunID
	if cur.Status == report.StatusNotRun {
		// Planned but not run here: as missing as a run the invocation left out
		// (--fail-missing fails on it).
		d.State, d.Note = gate.StateMissing, "not run here: "+cur.Reason
		return d
	}
	if !completed(cur.Status) {
		d.State, d.Note = gate.StateNotComparable, "this run ended "+cur.Status
		return d
	}
	if !completed(old.Status) {
		d.State, d.Note = gate.StateNotComparable, "the baseline run ended "+old.Status
		return d
	}
	d.State = gate.StateCompared
	if old.TimeScale != cur.TimeScale {
		d.Note = fmt.Sprintf("time scale %s in the baseline, %s now", num(old.TimeScale), num(cur.TimeScale))
	}
	scale := cur.TimeScale
	if old.TimeScale > 0 && (scale <= 0 || old.TimeScale < scale) {
		scale = old.TimeScale
	}
	program := realProgram(cur) || realProgram(old)
	exact := cur.Virtual() && old.Virtual() // virtual: no real-time noise floor
	d.Metrics = gate.Compare(old.Metrics.Flat(), cur.Metrics.Flat(), scale, func(m string) gate.Rule {
		r := c.Tolerances.Rule(cur.Scenario, m)
		if program && r.Source == "default" && programTiming(m) {
			r.Tolerance, r.Source = tolerance.Tolerance{Off: true}, gate.SourceRealProgram
		}
		if exact {
			r = r.Exact()
		}
		return r
	})
	shift := machineShift(old, cur)
	for i := range d.Metrics {
		m := &d.Metrics[i]
		if m.MachineShift = shift.of(m.Metric, m.New); m.MachineShift > 0 && m.Verdict == gate.VerdictRegressed {
			moved := *m
			moved.New -= m.MachineShift
			if m.Rule.Worse == gate.LowerIsWorse {
				moved.New = m.New + m.MachineShift
			}
			if gate.Verdict(moved) != gate.VerdictRegressed {
				m.Verdict = gate.VerdictMachine
			}
		}
	}
	return d
}

// taken is what the machine took from a run, per request, in real ms: how long its threads
// waited for a core (timing.cpu_wait_ms over the requests) and how late its link's timers
// fired on average times the trips a request waits on (timing.link_trips). Each part is
// false when the record does not say.
type taken struct {
	wait, link     float64
	hasWait, hasLn bool
}

func takenFrom(r *report.Run) taken {
	var t taken
	if r != nil && r.Virtual() {
		// virtual: not judged. The machine took nothing from its simulated time, whatever
		// its threads waited for in real time.
		return taken{hasWait: true, hasLn: true}
	}
	if r == nil || r.Timing == nil || r.Metrics.Requests <= 0 {
		return t
	}
	if w := r.Timing.CPUWaitMs; w != nil {
		t.wait, t.hasWait = *w/r.Metrics.Requests, true
	}
	if l, ok := r.Timing.Sources["link"]; ok && r.Timing.LinkTrips > 0 {
		t.link, t.hasLn = l.Mean*float64(r.Timing.LinkTrips), true
	}
	return t
}

// shift is how far a busier machine could have moved each time metric of a run.
type shift struct {
	perRequest float64 // scenario ms
	inTurn     float64 // requests a lane serves in turn
	total      float64 // the run's total_ms
}

// of returns how far the metric could have moved in its worse direction, in its unit.
func (s shift) of(metric string, value float64) float64 {
	if s.perRequest <= 0 {
		return 0
	}
	switch {
	case strings.HasPrefix(metric, "latency_ms."):
		return s.perRequest
	case metric == "total_ms":
		return s.perRequest * s.inTurn
	case metric == "rps" && s.total > 0:
		// rps = n / total: a total shorter by the shift gives this many more per second.
		t := max(s.total-s.perRequest*s.inTurn, s.total/1e3)
		return value*s.total/t - value
	}
	return 0
}

// machineShift returns how far what the machine took from the current run beyond what it
// took from the baseline run could have moved each time metric (README "Runs that know
// when they are wrong"). A request's latency is its trips on the link plus the computing
// between them; a busier machine makes the link's timers fire later (each trip by the
// link's lateness) and the computing wait for a core, which no timer sees. Per request, in
// scenario time, the excess is the extra wait for a core plus the extra mean link lateness
// times the trips a request waits on, each counted only where it grew:
//   - latency_ms.* moves by that excess (the mean exactly; a percentile by the mean, an
//     estimate);
//   - total_ms by the excess of every request a lane serves in turn (requests / concurrency);
//   - rps by what that does to total_ms.
//
// Counts, bytes and CPU are not moved. The link's own limits (timing.sources.link) still
// judge its lateness alone; this judges it together with the wait for a core.
func machineShift(old, cur *report.Run) shift {
	if cur.Virtual() {
		return shift{} // virtual: not judged; its time metrics are the model's, exactly
	}
	now, then := takenFrom(cur), takenFrom(old)
	var excess float64
	if now.hasWait && then.hasWait {
		excess += max(now.wait-then.wait, 0)
	}
	if now.hasLn && then.hasLn {
		excess += max(now.link-then.link, 0)
	}
	scale := cur.TimeScale
	if scale <= 0 {
		scale = 1
	}
	var p struct {
		Load struct{ Concurrency float64 } `json:"load"`
	}
	_ = json.Unmarshal(cur.Params, &p) // absent or unreadable: one lane, the widest shift
	return shift{perRequest: excess / scale, inTurn: cur.Metrics.Requests / max(p.Load.Concurrency, 1), total: cur.Metrics.TotalMs}
}

// realProgram reports whether a run drove a real client program (client.exec) or a real
// server (nginx, Node, HAProxy, a command or a URL).
func realProgram(r *report.Run) bool {
	return r.Client != nil || (r.Server != nil && r.Server.Kind != "" && r.Server.Kind != "embedded")
}

// programTiming reports whether a metric is a run's timing: what a real program's start-up
// and its runtime's scheduling move from one run to the next on the same machine (an
// unmodified truth-curl / real-loop moved rps and total_ms beyond ±15% at a load of 1.5-4:
// a curl process per request pays its start-up each time). Such a run's baseline gates
// what the program decides (counts, errors, reuse); its timing is shown, not gated, unless
// a file or a flag sets a tolerance, and a file compares it with the model's in the same
// invocation instead (compare:).
func programTiming(metric string) bool {
	return metric == "total_ms" || metric == "rps" || strings.HasPrefix(metric, "latency_ms.")
}

func completed(status string) bool { return status == report.StatusPass || status == report.StatusFail }

// Gates returns the metrics the comparison gates for a run, each with the slack its rule
// allows (how far it may move from the baseline value, in its own unit), at the smaller
// time scale of the run's and its baseline run's; nil for a run not in the baseline. The
// metrics a baseline gates are checks too: each run's timing tolerance covers them with
// that slack as their known margin (docs/timing.md). rps has no timer of its own: its
// slack is given as the same share of total_ms.
func (c *Comparer) Gates(scenarioName, variant string, scale float64) map[string]float64 {
	old := c.Baseline.Run(scenarioName, variant)
	if old == nil {
		return nil // a new run: nothing to compare with
	}
	if old.TimeScale > 0 && (scale <= 0 || old.TimeScale < scale) {
		scale = old.TimeScale
	}
	flat := old.Metrics.Flat()
	gated := map[string]float64{}
	for _, m := range check.Names() {
		r := c.Tolerances.Rule(scenarioName, m)
		if r.Tolerance.Off || r.Worse == gate.Informational {
			continue
		}
		slack := r.Slack(m, flat, scale)
		if m == "rps" && flat["rps"] > 0 {
			slack = flat["total_ms"] * slack / flat["rps"] // the same share of total_ms
		}
		gated[m] = slack
	}
	return gated
}

// Apply compares a run that just ended with its baseline and records the outcome on it: a
// failed check of kind "baseline" per regressed metric (which fails the run), and a
// report.BaselineRef naming the baseline run, its state, the regressions and the improvements.
func (c *Comparer) Apply(cur *report.Run) {
	d := c.CompareRun(cur)
	var unsure []string
	ref := &report.BaselineRef{File: c.Baseline.Path, RunID: d.BaselineRunID, State: d.State, Note: d.Note}
	for _, m := range d.Metrics {
		switch m.Verdict {
		case gate.VerdictRegressed:
			ref.Regressed = append(ref.Regressed, m.Metric)
			ch := report.Check{Kind: "baseline", Expr: m.Expr(), Pass: false,
				Observed: map[string]float64{m.Metric: m.New, "baseline": m.Old},
				File:     cur.File, Line: 1, Col: 1}
			if t := m.Rule.Tolerance; t.Line > 0 {
				ch.Line, ch.Col = t.Line, max(t.Col, 1)
			}
			cur.Checks = append(cur.Checks, ch)
			cur.Status = report.StatusFail
		case gate.VerdictImproved:
			ref.Improved = append(ref.Improved, m.Metric)
		case gate.VerdictMachine:
			unsure = append(unsure, fmt.Sprintf("%s %s against %s, but inside the %s this could add",
				m.Metric, num(m.New), m.Expr(), num(m.MachineShift)))
		}
	}
	cur.Baseline = ref
	if len(unsure) > 0 && len(ref.Regressed) == 0 && cur.Timing != nil {
		// Not a result: what the machine's other work took from this run could be the
		// whole regression. The runner reruns it alone (README "Runs that know when they
		// are wrong"). A run with a regression nothing the machine took could make keeps
		// its verdict.
		now, then := takenFrom(cur), takenFrom(c.Baseline.Run(cur.Scenario, cur.Variant))
		cur.Timing.Noisy = true
		cur.Timing.Reason = fmt.Sprintf("machine: per request this run's threads waited %s ms for a core and its link's timers added %s ms, the baseline run's %s and %s; %s",
			num(now.wait), num(now.link), num(then.wait), num(then.link), strings.Join(unsure, "; "))
	}
}

// Missing lists the baseline runs that are not among runs, in baseline order. keep, when
// not nil, limits it to the runs the invocation meant to run (the files it selected, a
// --filter).
func (b *Baseline) Missing(runs []*report.Run, keep func(base *report.Run) bool) []gate.RunDiff {
	seen := make(map[string]bool, len(runs))
	for _, r := range runs {
		seen[runKey(r.Scenario, r.Variant)] = true
	}
	var out []gate.RunDiff
	for i := range b.Runs {
		r := &b.Runs[i]
		if seen[runKey(r.Scenario, r.Variant)] || (keep != nil && !keep(r)) {
			continue
		}
		out = append(out, gate.RunDiff{Scenario: r.Scenario, Variant: r.Variant, File: r.File, State: gate.StateMissing, BaselineRunID: r.RunID})
	}
	return out
}

// Diff compares every run with the baseline: the runs in their order, then the baseline
// runs that are missing.
func (c *Comparer) Diff(runs []*report.Run) []gate.RunDiff {
	out := make([]gate.RunDiff, 0, len(runs))
	for _, r := range runs {
		out = append(out, c.CompareRun(r))
	}
	return append(out, c.Baseline.Missing(runs, nil)...)
}

func num(f float64) string { return numtext.Format(f) }
