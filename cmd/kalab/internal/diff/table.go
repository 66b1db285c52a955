package diff

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/numtext"
)

// keyMetrics are always shown by the diff table, changed or not, so a reader sees the
// figures that matter next to what moved.
var keyMetrics = map[string]bool{
	"requests": true, "errors": true, "connections": true, "latency_ms.p50": true,
	"latency_ms.p95": true, "total_ms": true,
}

// DiffCounts tallies a comparison.
type DiffCounts struct {
	Compared, Regressed, Improved, New, Missing, NotComparable int
}

// Count tallies runs by state; a run counts as regressed or improved when any of its
// metrics is (a run can be both).
func Count(diffs []gate.RunDiff) DiffCounts {
	var c DiffCounts
	for _, d := range diffs {
		switch d.State {
		case gate.StateCompared:
			c.Compared++
			if len(d.With(gate.VerdictRegressed)) > 0 {
				c.Regressed++
			}
			if len(d.With(gate.VerdictImproved)) > 0 {
				c.Improved++
			}
		case gate.StateNew:
			c.New++
		case gate.StateMissing:
			c.Missing++
		case gate.StateNotComparable:
			c.NotComparable++
		}
	}
	return c
}

// String renders the tally as the summary line of kalab diff and kalab run --baseline.
func (c DiffCounts) String() string {
	return fmt.Sprintf("%d compared, %d regressed, %d improved, %d new, %d missing, %d not comparable",
		c.Compared, c.Regressed, c.Improved, c.New, c.Missing, c.NotComparable)
}

// DiffTable renders a comparison as a table: for each run, its key metrics and every metric
// that regressed or improved (all: every metric), then new and missing runs.
func DiffTable(w io.Writer, diffs []gate.RunDiff, all bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tMETRIC\tOLD\tNEW\tCHANGE\tTOLERANCE\tVERDICT")
	for _, d := range diffs {
		if d.State != gate.StateCompared {
			note := d.State
			if d.Note != "" {
				note += ": " + d.Note
			}
			fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\t\t%s\n", d.Scenario, d.Variant, note)
			continue
		}
		if d.Note != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\t\tnote: %s\n", d.Scenario, d.Variant, d.Note)
		}
		for _, m := range d.Metrics {
			if !all && !keyMetrics[m.Metric] && (m.Verdict == gate.VerdictSame || m.Verdict == gate.VerdictChanged || m.Verdict == gate.VerdictOff) {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Scenario, d.Variant, m.Metric,
				numtext.Format(m.Old), numtext.Format(m.New), m.Change(), appliedTolerance(m), verdictText(m.Verdict))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", Count(diffs))
	return err
}

// appliedTolerance is the tolerance that decided the verdict: the written one, and when a
// noise floor widened it, the slack actually allowed in the metric's unit, e.g.
// "+15%, at least +80.2".
func appliedTolerance(m gate.MetricDelta) string {
	text := toleranceText(m.Rule)
	t := m.Rule.Tolerance
	if t.Off || m.Rule.Worse == gate.Informational {
		return text
	}
	stated := t.Value
	if t.Relative {
		stated = t.Value * math.Abs(m.Old)
	}
	if m.Slack <= stated*(1+1e-9)+1e-12 {
		return text
	}
	sign := "+"
	switch m.Rule.Worse {
	case gate.LowerIsWorse:
		sign = "-"
	case gate.AnyChange:
		sign = "±"
	}
	return fmt.Sprintf("%s, at least %s%s", text, sign, numtext.Format(m.Slack))
}

func toleranceText(r gate.Rule) string {
	switch r.Worse {
	case gate.Informational:
		return "-"
	case gate.AnyChange:
		return "±" + r.Tolerance.String()
	case gate.LowerIsWorse:
		if r.Tolerance.Off {
			return "off"
		}
		return "-" + r.Tolerance.String()
	}
	if r.Tolerance.Off {
		return "off"
	}
	return "+" + r.Tolerance.String()
}

func verdictText(v string) string {
	switch v {
	case gate.VerdictRegressed:
		return "REGRESSED"
	case gate.VerdictMachine:
		return "no verdict (machine)"
	}
	return v
}

// BaselineSummary renders what a run against a baseline found beyond the failed checks the
// summary table already lists: improvements, new runs, missing runs and notes.
func BaselineSummary(w io.Writer, path string, diffs []gate.RunDiff, failMissing bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nbaseline %s: %s\n", path, Count(diffs))
	for _, d := range diffs {
		where := d.Scenario + " / " + d.Variant
		switch d.State {
		case gate.StateCompared:
			for _, m := range d.With(gate.VerdictImproved) {
				fmt.Fprintf(&b, "  improved  %s: %s %s -> %s (%s)\n", where, m.Metric, numtext.Format(m.Old), numtext.Format(m.New), m.Change())
			}
			if d.Note != "" {
				fmt.Fprintf(&b, "  note      %s: %s\n", where, d.Note)
			}
		case gate.StateNew:
			fmt.Fprintf(&b, "  new       %s: not in the baseline\n", where)
		case gate.StateMissing:
			label := "missing "
			if failMissing {
				label = "MISSING "
			}
			fmt.Fprintf(&b, "  %s  %s: %s\n", label, where, d.MissingText())
		case gate.StateNotComparable:
			fmt.Fprintf(&b, "  skipped   %s: not compared: %s\n", where, d.Note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
