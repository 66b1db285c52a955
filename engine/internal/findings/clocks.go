package findings

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// clockCounts are the counts the clocks page sets side by side.
var clockCounts = []string{"errors", "connections", "reused_requests", "retries", "hidden_retries"}

// ClockRow is one run of the clocks page: its counts on the virtual clock (the baseline),
// each followed by the real clock's in bold where the two differ.
type ClockRow struct {
	Run   string // "scenario / variant"
	Cells []string
}

// ClockRows is the clocks page's table: every run of the real-clock file whose baseline run
// went virtual, in the real file's order, with how many of their counts agree.
type ClockRows struct {
	Rows         []ClockRow
	Equal, Total int
}

func (d *data) clockRows() ClockRows {
	var out ClockRows
	for i := range d.real.Runs {
		rr := &d.real.Runs[i]
		vr, ok := d.runs[rr.Scenario+"/"+rr.Variant]
		if !ok || vr.Clock != "virtual" {
			continue
		}
		row := ClockRow{Run: rr.Scenario + " / " + rr.Variant}
		virt, real := vr.Metrics.Flat(), rr.Metrics.Flat()
		for _, m := range clockCounts {
			cell := strconv.FormatFloat(virt[m], 'f', -1, 64)
			if virt[m] == real[m] {
				out.Equal++
			} else {
				cell += " / **" + strconv.FormatFloat(real[m], 'f', -1, 64) + "**"
			}
			out.Total++
			row.Cells = append(row.Cells, cell)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// RealChecks is what the real-clock run's own checks said: the ones that failed (file, the
// expression and what it read) and how many runs were rerun alone.
type RealChecks struct {
	Failed []string
	Reruns int
}

func (d *data) realChecks() RealChecks {
	var out RealChecks
	add := func(checks []report.Check) {
		for _, c := range checks {
			if !c.Pass && c.NotEvaluated == "" {
				out.Failed = append(out.Failed, fmt.Sprintf("`%s`'s `%s` (%s)", filepath.Base(c.File), c.Expr, observed(c.Observed)))
			}
		}
	}
	for i := range d.real.Runs {
		r := &d.real.Runs[i]
		add(r.Checks)
		if r.Timing != nil && r.Timing.Attempt > 1 {
			out.Reruns++
		}
	}
	for i := range d.real.Scenarios {
		add(d.real.Scenarios[i].Checks)
	}
	return out
}

// observed writes a check's readings in a stable order, as the summary does.
func observed(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " = " + Grouped(m[k], 1)
	}
	return strings.Join(parts, ", ")
}
