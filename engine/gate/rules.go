package gate

import (
	"fmt"
	"math"
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
	//lint:ignore U1000 the zero value, named: a rule whose slack is its tolerance alone
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

// Exact is r without the floors of the time metrics, which are real milliseconds of
// scheduler noise: how a run on the virtual clock is gated against a virtual baseline run,
// whose simulated times no scheduler moved. The floors of counts stay (a count Go's
// scheduler decides, such as a dial race, can still vary there).
func (r Rule) Exact() Rule {
	switch r.floor {
	case floorRealMs, floorPerRequest, floorThroughput:
		r.floor, r.Floor = floorNone, 0
	}
	return r
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

// ParseToleranceFlags reads every --tolerance given; a later one overrides an earlier for
// the same metric.
func ParseToleranceFlags(list []string) (map[string]tolerance.Tolerance, error) {
	out := map[string]tolerance.Tolerance{}
	for _, s := range list {
		set, err := ParseToleranceFlag(s)
		if err != nil {
			return nil, err
		}
		for name, t := range set {
			out[name] = t
		}
	}
	return out, nil
}
