package findings

import (
	"strconv"
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
