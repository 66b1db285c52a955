package terminal

import (
	"fmt"
	"io"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// replaySummary prints, for each replay run, what it read of its recording and the lines
// it could not read, with their numbers: "access.log (nginx): 1,204 lines, 1,200
// requests from 3 clients, 4 bad lines: 17 (no [time_local]), 90 (...)".
func replaySummary(w io.Writer, runs []*report.Run) {
	first := true
	for _, r := range runs {
		p := r.Replay
		if p == nil {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nreplayed recordings:")
			first = false
		}
		fmt.Fprintf(w, "  %s / %s: %s\n", r.Scenario, r.Variant, replayLine(p))
	}
}

// replayLine renders a replay block on one line.
func replayLine(p *report.Replay) string {
	more := ""
	if p.ClientsCapped {
		more = " or more"
	}
	line := fmt.Sprintf("%s (%s): %d lines, %d requests from %d%s clients", p.File, p.Format, p.Lines, p.Requests, p.Clients, more)
	if p.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped (window or sample)", p.Skipped)
	}
	if p.Late > 0 {
		line += fmt.Sprintf(", %d later than the reorder window (sent at once)", p.Late)
	}
	if p.BadLines == 0 {
		return line + ", no bad lines"
	}
	var bad []string
	for _, b := range p.FirstBad {
		bad = append(bad, fmt.Sprintf("%d (%s)", b.Line, b.Reason))
	}
	noun := "bad lines"
	if p.BadLines == 1 {
		noun = "bad line"
	}
	line += fmt.Sprintf(", %d %s: %s", p.BadLines, noun, strings.Join(bad, ", "))
	if rest := p.BadLines - len(p.FirstBad); rest > 0 {
		line += fmt.Sprintf(" and %d more", rest)
	}
	return line
}
