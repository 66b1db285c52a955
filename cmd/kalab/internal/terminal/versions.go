package terminal

import (
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/engine/report"
)

// versionSummary lists the runs whose real program ran at a version its preset was not
// verified against, each with its note.
func versionSummary(w io.Writer, runs []*report.Run) {
	var lines []string
	n := 0
	for _, r := range runs {
		notes := r.VersionNotes()
		if len(notes) > 0 {
			n++
		}
		for _, note := range notes {
			lines = append(lines, fmt.Sprintf("  %s / %s: %s", r.Scenario, r.Variant, note))
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "\nversions: %d of %d runs ran a program at a version its preset was not verified against\n", n, len(runs))
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
