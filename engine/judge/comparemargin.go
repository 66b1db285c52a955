package judge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// A compare check reads the metrics of several runs, each judged on its own timing before
// the check is evaluated. Each run's tolerance took the compare's margin as a tenth of an
// RTT (timing.go), which is a guess made before the run: a ratio near its bound may have
// less. Once the runs have ended, their measured lateness is known, so the compare is
// evaluated over every value that lateness allows, as expect checks are (margin): lateness
// only adds, so a run's model value of a latency lies between the observed one and the
// observed one less trips x the link's lateness at the matching statistic, never below one
// round trip of the link (latencyFloor). A verdict that
// changes inside that range is not given: the check is not evaluated, with the reason.

// fractions are the points of each operand's range the compare is evaluated at. The checks
// of the language are monotone in each operand between those points for the shapes users
// write (sums, differences, ratios of two runs' metrics against a constant), so the ends and
// the middle are enough to see a flip.
var fractions = []float64{0, 0.5, 1}

// latenessRange is, per variant and latency metric a compare reads, how much (scenario
// ms) the link's measured lateness could have added to the observed value.
type latenessRange map[string]map[string]float64

// compareRange collects the ranges of a compare's latency operands from their runs'
// timing: the link's lateness over the trips a request waits on, plus what other
// processes' CPU could have added to each request (neighbourShift, the CPU-pressure rule
// per check, cpurule.go). Empty when no operand reads a latency or no run measured either.
func compareRange(a scenario.Assertion, runs map[string]*report.Run) latenessRange {
	out := latenessRange{}
	for _, ref := range a.Refs() {
		r := runs[ref.Variant]
		if r == nil || r.Timing == nil || r.Clock == scenario.ClockVirtual {
			continue // a virtual run's latencies are the model's own, exactly
		}
		var d float64
		switch {
		case strings.HasPrefix(ref.Metric, "latency_ms."):
			d = linkRange(r, ref.Metric) + neighbourShift(r)
		case isWall(ref.Metric):
			d = neighbourWall(r)
		}
		if d <= 0 {
			continue
		}
		if out[ref.Variant] == nil {
			out[ref.Variant] = map[string]float64{}
		}
		out[ref.Variant][ref.Metric] = d
	}
	return out
}

// linkRange is how much (scenario ms) the link's measured lateness could have added to a
// latency metric of r: its lateness at the metric's statistic over the trips a request
// waits on; 0 without a link.
func linkRange(r *report.Run, metric string) float64 {
	src, ok := r.Timing.Sources[SrcLink]
	if r.Timing.LinkTrips == 0 || !ok {
		return 0
	}
	_, stat := metricClass(metric)
	scale := r.TimeScale
	if scale <= 0 {
		scale = 1
	}
	return float64(r.Timing.LinkTrips) * sourceStat(src, stat) / scale
}

// sourceStat is a timer source's lateness (real ms) at a judged statistic.
func sourceStat(s report.TimingSource, stat string) float64 {
	switch stat {
	case StatP50:
		return s.P50
	case StatP99:
		return s.P99
	case StatMax:
		return s.Max
	case StatMean:
		return s.Mean
	}
	return 0
}

// CPUUnjudged begins the reason of a compare of wall times alone (total_ms, rps) left
// without a verdict because the CPU other processes took could have changed it.
const CPUUnjudged = "the CPU other processes took"

// Unjudged reports whether a compare check's not-evaluated reason is the machine's timing
// (TimingUnjudged or CPUUnjudged), not the scenario's.
func Unjudged(reason string) bool {
	return strings.HasPrefix(reason, TimingUnjudged) || strings.HasPrefix(reason, CPUUnjudged)
}

// TimingUnjudged begins the reason of every compare check left without a verdict because
// the machine's timing could have changed it (compareFlip); Outcome.Unjudged finds them by it.
const TimingUnjudged = "the link's measured lateness"

// CompareFlip evaluates a compare across its operands' lateness ranges and, when its
// verdict changes inside them, says why it cannot be given; "" when the verdict holds.
func CompareFlip(a scenario.Assertion, runs map[string]*report.Run, verdict bool) string {
	if why := compareTimerFlip(a, runs, verdict); why != "" {
		return why // a real timer's metric (realtimers.go)
	}
	rng := compareRange(a, runs)
	if len(rng) == 0 {
		return ""
	}
	variants := slices.Sorted(maps.Keys(rng))
	at := make([]float64, len(variants))
	var walk func(i int) bool // true when some point flips the verdict
	walk = func(i int) bool {
		if i == len(variants) {
			return evalShifted(a, runs, rng, variants, at) != verdict
		}
		for _, f := range fractions {
			at[i] = f
			if walk(i + 1) {
				return true
			}
		}
		return false
	}
	if !walk(0) {
		return ""
	}
	var parts []string
	cpu := false
	for _, v := range variants {
		for _, m := range slices.Sorted(maps.Keys(rng[v])) {
			parts = append(parts, fmt.Sprintf("%s %s up to %.2f ms", v, m, rng[v][m]))
		}
		if why := cpuStolenWhy(runs[v], rng[v]); why != "" {
			cpu = true
			parts = append(parts, fmt.Sprintf("in %s %s", v, why))
		}
	}
	what := TimingUnjudged
	if cpu {
		what += " and the CPU other processes took"
	}
	if !readsLatency(rng) {
		what = CPUUnjudged
	}
	return what + " could change this check's verdict (" + strings.Join(parts, "; ") +
		" of the observed values may be lateness, not the scenario): run it with fewer runs at once (--parallel 1), " +
		"a larger --time-scale, or on a less busy machine"
}

// evalShifted evaluates the compare with each variant's latency operands lowered by the
// fraction at[i] of their range.
func evalShifted(a scenario.Assertion, runs map[string]*report.Run, rng latenessRange, variants []string, at []float64) bool {
	shift := map[string]float64{}
	for i, v := range variants {
		shift[v] = at[i]
	}
	lookup := func(name string) (check.Metrics, bool) {
		r, ok := runs[name]
		if !ok {
			return check.Metrics{}, false
		}
		f := r.Metrics.Flat()
		floor := latencyFloor(r)
		for m, d := range rng[name] {
			lowerMetric(f, m, shift[name]*d, floor)
		}
		return check.FromFlat(f), true
	}
	ok, err := a.EvalCompare(lookup)
	return ok && err == nil
}

// readsLatency reports whether any operand range is a latency's (the link's lateness can
// move it); a compare of wall times alone turns on the CPU other processes took.
func readsLatency(rng latenessRange) bool {
	for _, ms := range rng {
		for m := range ms {
			if strings.HasPrefix(m, "latency_ms.") {
				return true
			}
		}
	}
	return false
}
