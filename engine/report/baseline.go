package report

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
	"github.com/kalab-dev/kalab/engine/internal/tolerance"
)

// Direction says which way a metric gets worse.
type Direction int

// Directions of the metric vocabulary.
const (
	HigherIsWorse Direction = iota // errors, connections, latencies, totals
	LowerIsWorse                   // throughput, reuse
	AnyChange                      // the request count: a change means the baseline is stale
	Informational                  // shown by kalab diff, never a regression
)

// String names the direction as the diff table's reader thinks of it.
func (d Direction) String() string {
	switch d {
	case HigherIsWorse:
		return "up is worse"
	case LowerIsWorse:
		return "down is worse"
	case AnyChange:
		return "must not change"
	}
	return "informational"
}

// Rule is how one metric is compared with its baseline value.
type Rule struct {
	Worse     Direction
	Tolerance tolerance.Tolerance
	// Floor is the least slack a default or relative tolerance allows, so that noise does
	// not fail a build; its unit depends on the metric (see floorKind). An absolute
	// tolerance written in a scenario file or a flag is used exactly, without a floor.
	Floor float64
	// Source says where the tolerance came from: "default", "flag" or the scenario file.
	Source string
	floor  floorKind
}

// floorKind says how a rule's Floor turns into slack for one run.
type floorKind int

const (
	floorNone floorKind = iota
	// floorCount: the larger of Floor and 3 standard deviations of a Poisson count (3*sqrt
	// of the baseline value): a race that produced 16 errors may well produce 25 next time.
	floorCount
	// floorRealMs: Floor is milliseconds of real time, divided by the time scale, because
	// scheduler noise does not shrink with the scale while the scenario-time figures grow
	// by 1/scale.
	floorRealMs
	// floorPerRequest: Floor is real milliseconds per request, for totals of a run.
	floorPerRequest
	// floorThroughput: the drop in requests per second that the total_ms floor allows.
	floorThroughput
)

// Slack is how far the metric may move in its worse direction from its baseline value:
// the tolerance, widened to the noise floor for defaults and relative tolerances. old is
// the baseline run's metrics and scale the smaller time scale of the two runs.
func (r Rule) Slack(metric string, old map[string]float64, scale float64) float64 {
	v := old[metric]
	t := r.Tolerance
	if t.Off {
		return 0
	}
	slack := t.Value
	if t.Relative {
		slack = t.Value * math.Abs(v)
	}
	if !t.Relative && r.Source != "default" {
		return slack
	}
	if scale <= 0 {
		scale = 1
	}
	var floor float64
	switch r.floor {
	case floorCount:
		floor = math.Max(r.Floor, 3*math.Sqrt(math.Abs(v)))
	case floorRealMs:
		floor = r.Floor / scale
	case floorPerRequest:
		floor = r.Floor * old["requests"] / scale
	case floorThroughput:
		total := old["total_ms"]
		if total > 0 {
			totalSlack := totalRule.Floor * old["requests"] / scale
			floor = v * (1 - total/(total+totalSlack))
		}
	}
	return math.Max(slack, floor)
}

func abs(v float64) tolerance.Tolerance { return tolerance.Tolerance{Value: v} }
func rel(v float64) tolerance.Tolerance { return tolerance.Tolerance{Relative: true, Value: v} }

// totalRule is the total_ms default; rps derives its floor from it.
var totalRule = Rule{Worse: HigherIsWorse, Tolerance: rel(0.15), Floor: 5, floor: floorPerRequest}

// off is the default of metrics that are shown but not gated unless a tolerance is set.
var off = tolerance.Tolerance{Off: true}

// defaultRules are the tolerances a run gets unless a scenario file or a flag sets others.
// Counts are absolute, latencies and totals relative and upward, throughput and reuse
// downward; tail latencies, min/max and process-wide figures are shown but off unless a
// tolerance is set. The figures were set from runs of the
// default suite at --time-scale 0.1 with four runs in parallel on a 2-core machine, one of
// them while other tests loaded both cores (see doc.go).
var defaultRules = func() map[string]Rule {
	r := clientRules()
	for n, rule := range hopRules() {
		r[n] = rule
	}
	for _, n := range check.Names() {
		if strings.HasPrefix(n, "errors_by_class.") || strings.HasPrefix(n, "backend_errors_by_class.") {
			r[n] = countRule(HigherIsWorse)
		}
	}
	for n, rule := range r {
		rule.Source = "default"
		r[n] = rule
	}
	return r
}()

// countRule is the default of a count: 2 either way is noise.
func countRule(worse Direction) Rule {
	return Rule{Worse: worse, Tolerance: abs(2), Floor: 2, floor: floorCount}
}

// latRule is the default of a gated latency: relative, upward, with a floor in ms.
func latRule(tol, floorMs float64) Rule {
	return Rule{Worse: HigherIsWorse, Tolerance: rel(tol), Floor: floorMs, floor: floorRealMs}
}

// clientRules are the defaults of the client's metrics and the process-wide figures.
func clientRules() map[string]Rule {
	return map[string]Rule{
		"requests":           {Worse: AnyChange, Tolerance: abs(0)},
		"ok":                 {Worse: LowerIsWorse, Tolerance: off},
		"errors":             countRule(HigherIsWorse),
		"errors_per_1000":    {Worse: HigherIsWorse, Tolerance: off},
		"retries":            countRule(HigherIsWorse),
		"hidden_retries":     countRule(HigherIsWorse),
		"failed_attempts":    countRule(HigherIsWorse),
		"connections":        countRule(HigherIsWorse),
		"server_connections": countRule(HigherIsWorse),
		"proxy_connections":  countRule(HigherIsWorse),
		"tls_handshakes":     countRule(HigherIsWorse),
		"reused_requests":    countRule(LowerIsWorse),
		"reuse_ratio":        {Worse: LowerIsWorse, Tolerance: abs(0.02)},
		"tls_resumed":        {Worse: Informational},
		"latency_ms.p50":     latRule(0.20, 3),
		"latency_ms.mean":    latRule(0.30, 5),
		// Tails are shown, not gated: with reused (1 RTT) and new (3 RTT) requests in one
		// run the distribution is bimodal, and p90-p99 jump between the modes when a few
		// requests change sides. A file gates them where its distribution is unimodal.
		"latency_ms.p90": {Worse: HigherIsWorse, Tolerance: off, Floor: 10, floor: floorRealMs},
		"latency_ms.p95": {Worse: HigherIsWorse, Tolerance: off, Floor: 15, floor: floorRealMs},
		"latency_ms.p99": {Worse: HigherIsWorse, Tolerance: off, Floor: 40, floor: floorRealMs},
		"latency_ms.min": {Worse: HigherIsWorse, Tolerance: off, Floor: 3, floor: floorRealMs},
		"latency_ms.max": {Worse: HigherIsWorse, Tolerance: off, Floor: 40, floor: floorRealMs},
		"total_ms":       totalRule,
		"rps":            {Worse: LowerIsWorse, Tolerance: rel(0.15), floor: floorThroughput},
		// Process-wide figures: runs in parallel share the process, so by default they are
		// shown, not gated; a tolerance in a file or a flag gates them (upward is worse).
		"cpu_us_per_request": {Worse: HigherIsWorse, Tolerance: off},
		"peak_rss_mb":        {Worse: HigherIsWorse, Tolerance: off},
		// Sockets still closing when the run ended: depends on when the count was read.
		"time_wait": {Worse: HigherIsWorse, Tolerance: off},
	}
}

// hopRules are the defaults of the middlebox's and the balancer's metrics.
func hopRules() map[string]Rule {
	return map[string]Rule{
		// The middlebox hop: flows and what it did to them.
		"middlebox_flows":            countRule(HigherIsWorse),
		"middlebox_expired":          countRule(HigherIsWorse),
		"middlebox_dropped_segments": {Worse: Informational},
		"middlebox_dropped_bytes":    {Worse: Informational},
		"middlebox_resets":           countRule(HigherIsWorse),
		"middlebox_probe_refreshes":  {Worse: Informational},
		// The balancer hop: counts like the client's own.
		"status_5xx":                countRule(HigherIsWorse),
		"balancer_connections":      countRule(HigherIsWorse),
		"balancer_requests":         {Worse: Informational},
		"balancer_errors":           countRule(HigherIsWorse),
		"balancer_closes":           countRule(HigherIsWorse),
		"balancer_retries":          countRule(HigherIsWorse),
		"backend_connections":       countRule(HigherIsWorse),
		"backend_reused_requests":   countRule(LowerIsWorse),
		"backend_errors":            countRule(HigherIsWorse),
		"backend_proxy_connections": countRule(HigherIsWorse),
		"bytes_up":                  {Worse: Informational},
		"bytes_down":                {Worse: Informational},
		"listen_overflows":          countRule(HigherIsWorse),
		"syn_retried_connects":      countRule(HigherIsWorse),
		"failed_bursts":             countRule(HigherIsWorse),
		// Which bursts failed: a set, not a quantity; compare files read it.
		"failed_bursts_mask": {Worse: Informational},
	}
}

// DefaultRule returns the default rule of a metric; ok is false for a name outside the
// metric vocabulary.
func DefaultRule(metric string) (Rule, bool) {
	r, ok := defaultRules[metric]
	if !ok && check.IsName(metric) {
		// A metric added to the vocabulary after this table: compare it, loosely.
		return Rule{Worse: Informational, Source: "default"}, true
	}
	return r, ok
}

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

// ParseToleranceFlag reads METRIC=TOLERANCE, as given to --tolerance. METRIC may end in
// ".*" to set every metric of a group (latency_ms.*, errors_by_class.*).
func ParseToleranceFlag(s string) (map[string]tolerance.Tolerance, error) {
	name, val, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return nil, fmt.Errorf("%q: use METRIC=TOLERANCE, e.g. latency_ms.p50=5%%", s)
	}
	var names []string
	if group, isGroup := strings.CutSuffix(name, ".*"); isGroup {
		for _, n := range check.Names() {
			if strings.HasPrefix(n, group+".") {
				names = append(names, n)
			}
		}
	} else if check.IsName(name) {
		names = []string{name}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%q: unknown metric %q (kalab help metrics lists them)", s, name)
	}
	t, err := tolerance.Parse(val)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := make(map[string]tolerance.Tolerance, len(names))
	for _, n := range names {
		out[n] = t
	}
	return out, nil
}

// Rule returns the rule that applies to a metric of a scenario.
func (t *Tolerances) Rule(scenarioName, metric string) Rule {
	r, _ := DefaultRule(metric)
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
	if r.Worse == Informational && r.Source != "default" {
		// A metric with no better direction (tls_resumed): a tolerance bounds any change.
		r.Worse = AnyChange
	}
	return r
}

// Baseline is a results.jsonl of an earlier run that later runs are compared with.
type Baseline struct {
	Path string
	Runs []Run
	// Invocation is the file's closing invocation record; nil for a file written before
	// kalab recorded invocations (its completeness is unknown, see Complete).
	Invocation *Invocation
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
		return false, &BaselineError{Path: b.Path, Err: fmt.Errorf("is from an invocation that did not complete (%s); use a complete run, or pass --allow-partial to compare with the runs it has", inv.Describe())}
	}
	return false, nil
}

// BaselineError is bad baseline input: a file that cannot be read as kalab results.
type BaselineError struct {
	Path string
	Err  error
}

// Error names the baseline file and what is wrong with it.
func (e *BaselineError) Error() string {
	return fmt.Sprintf("baseline %s: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *BaselineError) Unwrap() error { return e.Err }

// LoadBaseline reads a results.jsonl (or a run directory holding one) as a baseline. It
// rejects lines that are not JSON, that break schema/result.schema.json or that carry
// another record version, a file without runs, and a scenario/variant seen twice; every
// such error is a *BaselineError.
func LoadBaseline(path string) (*Baseline, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "results.jsonl")
	}
	// A FIFO or a device would block the read or never end: refuse it before opening.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, &BaselineError{Path: path, Err: fmt.Errorf("is not a regular file (%s); a baseline is a results.jsonl file", st.Mode().Type())}
	}
	res, err := ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		} else {
			err = fmt.Errorf("line %w", trimPathPrefix(err, path))
		}
		return nil, &BaselineError{Path: path, Err: err}
	}
	if len(res.Runs) == 0 {
		return nil, &BaselineError{Path: path, Err: errors.New("holds no run records; write a baseline with kalab run --out DIR and copy DIR/latest/results.jsonl")}
	}
	if _, err := ValidateFile(path, false); err != nil {
		return nil, &BaselineError{Path: path, Err: fmt.Errorf("does not match schema/result.schema.json: line %w", trimPathPrefix(err, path))}
	}
	b := &Baseline{Path: path, Runs: res.Runs, Invocation: res.Invocation, index: make(map[string]int, len(res.Runs))}
	for i, r := range res.Runs {
		if err := physical(r); err != nil {
			return nil, &BaselineError{Path: path, Err: fmt.Errorf("line %d: run %s / %s: %w", r.line, r.Scenario, r.Variant, err)}
		}
		k := runKey(r.Scenario, r.Variant)
		if _, dup := b.index[k]; dup {
			return nil, &BaselineError{Path: path, Err: fmt.Errorf("run %s / %s appears twice; a baseline is the results of one invocation", r.Scenario, r.Variant)}
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
func physical(r Run) error {
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

// trimPathPrefix drops the "path:" that ReadFile and ValidateFile put first, so the message
// can say "line N" instead.
func trimPathPrefix(err error, path string) error {
	return errors.New(strings.TrimPrefix(err.Error(), path+":"))
}

// Run returns the baseline run of a scenario and variant, or nil.
func (b *Baseline) Run(scenarioName, variant string) *Run {
	if i, ok := b.index[runKey(scenarioName, variant)]; ok {
		return &b.Runs[i]
	}
	return nil
}

func runKey(s, v string) string { return s + "\x00" + v }

// Verdicts of a metric compared with its baseline.
const (
	VerdictSame      = "same"      // within tolerance
	VerdictRegressed = "regressed" // worse by more than the tolerance
	VerdictImproved  = "improved"  // better by more than the tolerance
	VerdictChanged   = "changed"   // an informational metric that moved
	VerdictOff       = "off"       // not compared (tolerance off)
	// VerdictMachine: worse by more than the tolerance, but by less than what the machine
	// took from the run beyond what it took from the baseline run (its extra wait for a
	// core and its link's extra lateness) could have added: no verdict (see machineShift).
	VerdictMachine = "machine"
)

// States of a run in a comparison.
const (
	StateCompared      = "compared"       // both runs completed; metrics compared
	StateNew           = "new"            // not in the baseline
	StateMissing       = "missing"        // in the baseline, not in this invocation or not run here (not-run)
	StateNotComparable = "not-comparable" // one side errored or was interrupted
)

// MetricDelta is one metric of a run next to its baseline value.
type MetricDelta struct {
	Metric   string
	Old, New float64
	Rule     Rule
	Slack    float64 // how far it could move in its worse direction
	Verdict  string
	// MachineShift is how far what the machine took from the run beyond its baseline run
	// (machineShift) could have moved the metric in its worse direction; 0 for counts.
	MachineShift float64
}

// Delta is New - Old.
func (m MetricDelta) Delta() float64 { return m.New - m.Old }

// Change renders the change: "+12.5%" against a non-zero baseline, else "+3".
func (m MetricDelta) Change() string {
	d := m.Delta()
	if d == 0 {
		return "0"
	}
	if m.Old != 0 {
		return fmt.Sprintf("%+.1f%%", 100*d/math.Abs(m.Old))
	}
	if d > 0 {
		return "+" + num(d)
	}
	return num(d)
}

// Expr renders the rule as the expression a failed check shows, e.g.
// "latency_ms.p50 <= 170.5 (baseline 155 +10%)".
func (m MetricDelta) Expr() string {
	tol := m.Rule.Tolerance.String()
	if m.Rule.Tolerance.Relative && m.Slack > m.Rule.Tolerance.Value*math.Abs(m.Old) {
		tol = fmt.Sprintf("%s, at least %s", tol, num(m.Slack))
	}
	switch m.Rule.Worse {
	case LowerIsWorse:
		return fmt.Sprintf("%s >= %s (baseline %s -%s)", m.Metric, num(m.Old-m.Slack), num(m.Old), tol)
	case AnyChange:
		return fmt.Sprintf("%s == %s (baseline, ±%s)", m.Metric, num(m.Old), tol)
	}
	return fmt.Sprintf("%s <= %s (baseline %s +%s)", m.Metric, num(m.Old+m.Slack), num(m.Old), tol)
}

// RunDiff is one run compared with its baseline run.
type RunDiff struct {
	Scenario, Variant, File string
	State                   string
	Note                    string // why a run is not comparable, or a caveat such as a time scale change
	BaselineRunID           string
	Metrics                 []MetricDelta // sorted by metric name; empty unless compared
}

// With returns the metrics with the given verdict.
func (d RunDiff) With(verdict string) []MetricDelta {
	var out []MetricDelta
	for _, m := range d.Metrics {
		if m.Verdict == verdict {
			out = append(out, m)
		}
	}
	return out
}

// Comparer compares runs with a baseline under a set of tolerances. It only reads its
// fields, so runs may be compared from several goroutines at once.
type Comparer struct {
	Baseline   *Baseline
	Tolerances *Tolerances
}

// CompareRun compares one run with its baseline run.
func (c *Comparer) CompareRun(cur *Run) RunDiff {
	d := RunDiff{Scenario: cur.Scenario, Variant: cur.Variant, File: cur.File}
	old := c.Baseline.Run(cur.Scenario, cur.Variant)
	if old == nil {
		d.State = StateNew
		return d
	}
	d.BaselineRunID = old.RunID
	if cur.Status == StatusNotRun {
		// Planned but not run here: as missing as a run the invocation left out
		// (--fail-missing fails on it).
		d.State, d.Note = StateMissing, "not run here: "+cur.Reason
		return d
	}
	if !completed(cur.Status) {
		d.State, d.Note = StateNotComparable, "this run ended "+cur.Status
		return d
	}
	if !completed(old.Status) {
		d.State, d.Note = StateNotComparable, "the baseline run ended "+old.Status
		return d
	}
	d.State = StateCompared
	if old.TimeScale != cur.TimeScale {
		d.Note = fmt.Sprintf("time scale %s in the baseline, %s now", num(old.TimeScale), num(cur.TimeScale))
	}
	scale := cur.TimeScale
	if old.TimeScale > 0 && (scale <= 0 || old.TimeScale < scale) {
		scale = old.TimeScale
	}
	program := realProgram(cur) || realProgram(old)
	d.Metrics = compareMetrics(old.Metrics.Flat(), cur.Metrics.Flat(), scale, func(m string) Rule {
		r := c.Tolerances.Rule(cur.Scenario, m)
		if program && r.Source == "default" && programTiming(m) {
			r.Tolerance, r.Source = off, SourceRealProgram
		}
		return r
	})
	shift := machineShift(old, cur)
	for i := range d.Metrics {
		m := &d.Metrics[i]
		if m.MachineShift = shift.of(m.Metric, m.New); m.MachineShift > 0 && m.Verdict == VerdictRegressed {
			moved := *m
			moved.New -= m.MachineShift
			if m.Rule.Worse == LowerIsWorse {
				moved.New = m.New + m.MachineShift
			}
			if verdict(moved) != VerdictRegressed {
				m.Verdict = VerdictMachine
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

func takenFrom(r *Run) taken {
	var t taken
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
func machineShift(old, cur *Run) shift {
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

// SourceRealProgram is the Rule.Source of a timing metric a run of a real program does not
// gate by default.
const SourceRealProgram = "real program"

// realProgram reports whether a run drove a real client program (client.exec) or a real
// server (nginx, Node, HAProxy, a command or a URL).
func realProgram(r *Run) bool {
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

func completed(status string) bool { return status == StatusPass || status == StatusFail }

func compareMetrics(old, cur map[string]float64, scale float64, rule func(string) Rule) []MetricDelta {
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]MetricDelta, 0, len(names))
	for _, n := range names {
		m := MetricDelta{Metric: n, Old: old[n], New: cur[n], Rule: rule(n)}
		m.Slack = m.Rule.Slack(n, old, scale)
		m.Verdict = verdict(m)
		out = append(out, m)
	}
	return out
}

func verdict(m MetricDelta) string {
	if m.Rule.Tolerance.Off {
		return VerdictOff
	}
	// A tiny epsilon keeps "0.1 + 0.2" style float noise from deciding a verdict.
	worse, better := m.New-m.Old, m.Old-m.New
	if m.Rule.Worse == LowerIsWorse {
		worse, better = better, worse
	}
	eps := 1e-9 * math.Max(1, math.Abs(m.Old))
	switch m.Rule.Worse {
	case Informational:
		if math.Abs(m.New-m.Old) > eps {
			return VerdictChanged
		}
		return VerdictSame
	case AnyChange:
		if math.Abs(m.New-m.Old) > m.Slack+eps {
			return VerdictRegressed
		}
		return VerdictSame
	}
	switch {
	case worse > m.Slack+eps:
		return VerdictRegressed
	case better > m.Slack+eps:
		return VerdictImproved
	}
	return VerdictSame
}

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
		if r.Tolerance.Off || r.Worse == Informational {
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
// BaselineRef naming the baseline run, its state, the regressions and the improvements.
func (c *Comparer) Apply(cur *Run) {
	d := c.CompareRun(cur)
	var unsure []string
	ref := &BaselineRef{File: c.Baseline.Path, RunID: d.BaselineRunID, State: d.State, Note: d.Note}
	for _, m := range d.Metrics {
		switch m.Verdict {
		case VerdictRegressed:
			ref.Regressed = append(ref.Regressed, m.Metric)
			ch := Check{Kind: "baseline", Expr: m.Expr(), Pass: false,
				Observed: map[string]float64{m.Metric: m.New, "baseline": m.Old},
				File:     cur.File, Line: 1, Col: 1}
			if t := m.Rule.Tolerance; t.Line > 0 {
				ch.Line, ch.Col = t.Line, max(t.Col, 1)
			}
			cur.Checks = append(cur.Checks, ch)
			cur.Status = StatusFail
		case VerdictImproved:
			ref.Improved = append(ref.Improved, m.Metric)
		case VerdictMachine:
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
func (b *Baseline) Missing(runs []*Run, keep func(base *Run) bool) []RunDiff {
	seen := make(map[string]bool, len(runs))
	for _, r := range runs {
		seen[runKey(r.Scenario, r.Variant)] = true
	}
	var out []RunDiff
	for i := range b.Runs {
		r := &b.Runs[i]
		if seen[runKey(r.Scenario, r.Variant)] || (keep != nil && !keep(r)) {
			continue
		}
		out = append(out, RunDiff{Scenario: r.Scenario, Variant: r.Variant, File: r.File, State: StateMissing, BaselineRunID: r.RunID})
	}
	return out
}

// Selected returns the Missing filter for an invocation that loaded the scenarios named
// and was given paths (files or directories): a baseline run counts when its scenario was
// loaded, or when its file lies under one of the paths, so a file deleted from a selected
// directory is still missing while the files a subset left out are not.
func Selected(scenarios, paths []string) func(base *Run) bool {
	loaded := make(map[string]bool, len(scenarios))
	for _, s := range scenarios {
		loaded[s] = true
	}
	var roots []string
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			roots = append(roots, abs)
		}
	}
	return func(r *Run) bool {
		if loaded[r.Scenario] {
			return true
		}
		file, err := filepath.Abs(r.File)
		if err != nil {
			return false
		}
		for _, root := range roots {
			if rel, err := filepath.Rel(root, file); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
}

// Diff compares every run with the baseline: the runs in their order, then the baseline
// runs that are missing.
func (c *Comparer) Diff(runs []*Run) []RunDiff {
	out := make([]RunDiff, 0, len(runs))
	for _, r := range runs {
		out = append(out, c.CompareRun(r))
	}
	return append(out, c.Baseline.Missing(runs, nil)...)
}
