package gate

import (
	"fmt"
	"math"
	"sort"

	"github.com/kalab-dev/kalab/engine/numtext"
)

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
		return "+" + numtext.Format(d)
	}
	return numtext.Format(d)
}

// Expr renders the rule as the expression a failed check shows, e.g.
// "latency_ms.p50 <= 170.5 (baseline 155 +10%)".
func (m MetricDelta) Expr() string {
	tol := m.Rule.Tolerance.String()
	if m.Rule.Tolerance.Relative && m.Slack > m.Rule.Tolerance.Value*math.Abs(m.Old) {
		tol = fmt.Sprintf("%s, at least %s", tol, numtext.Format(m.Slack))
	}
	switch m.Rule.Worse {
	case LowerIsWorse:
		return fmt.Sprintf("%s >= %s (baseline %s -%s)", m.Metric, numtext.Format(m.Old-m.Slack), numtext.Format(m.Old), tol)
	case AnyChange:
		return fmt.Sprintf("%s == %s (baseline, ±%s)", m.Metric, numtext.Format(m.Old), tol)
	}
	return fmt.Sprintf("%s <= %s (baseline %s +%s)", m.Metric, numtext.Format(m.Old+m.Slack), numtext.Format(m.Old), tol)
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

// SourceRealProgram is the Rule.Source of a timing metric a run of a real program does not
// gate by default.
const SourceRealProgram = "real program"

// Compare compares each metric of cur with its value in old, under the rule rule gives it,
// at the time scale scale (the smaller of the two runs'); sorted by metric name.
func Compare(old, cur map[string]float64, scale float64, rule func(string) Rule) []MetricDelta {
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]MetricDelta, 0, len(names))
	for _, n := range names {
		m := MetricDelta{Metric: n, Old: old[n], New: cur[n], Rule: rule(n)}
		m.Slack = m.Rule.Slack(n, old, scale)
		m.Verdict = Verdict(m)
		out = append(out, m)
	}
	return out
}

// Verdict decides one metric: same, regressed, improved, changed or off.
func Verdict(m MetricDelta) string {
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

// MissingText says why a baseline run is missing.
func (d RunDiff) MissingText() string {
	if d.Note != "" {
		return "in the baseline but " + d.Note
	}
	return "in the baseline but did not run"
}
