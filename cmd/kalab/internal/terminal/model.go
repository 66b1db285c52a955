package terminal

import (
	"fmt"
	"io"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// modelSummary prints, for each run with a prediction, one line of its predicted counts
// beside the measured ones, e.g. "stale-race / node-agent: errors 15 (measured 15),
// connections 57 (57)", and a "model disagreement" line for each run whose measured count
// fell outside the prediction's bounds.
func modelSummary(w io.Writer, runs []*report.Run) {
	var lines, disagree []string
	for _, r := range runs {
		if line := predictedLine(r.Predicted); line != "" {
			lines = append(lines, fmt.Sprintf("  %s / %s: %s", r.Scenario, r.Variant, line))
		}
		if r.Predicted != nil && r.Predicted.Disagreement {
			disagree = append(disagree, fmt.Sprintf("model disagreement: %s / %s: %s", r.Scenario, r.Variant, r.Predicted.Reason))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\npredicted from the plan (engine/oracle), measured in parentheses:")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	for _, d := range disagree {
		fmt.Fprintln(w, d)
	}
}

// predictedLine renders a prediction's counts on one line: "errors 15 (measured 15),
// connections at most 402 (398), reused_requests not predicted"; "" when nothing is
// predicted.
func predictedLine(p *report.Predicted) string {
	if p == nil {
		return ""
	}
	var parts []string
	any := false
	for _, c := range p.Counts {
		if !c.Predicted {
			parts = append(parts, c.Metric+" not predicted")
			continue
		}
		v := fmt.Sprint(c.Value)
		switch {
		case c.AtMost:
			v = fmt.Sprintf("at most %d", c.Value)
		case c.Lo != c.Hi:
			v = fmt.Sprintf("%d [%d..%d]", c.Value, c.Lo, c.Hi)
		}
		m := num(c.Measured)
		if !any {
			m = "measured " + m
		}
		mark := ""
		if c.Verdict == report.ModelDisagree {
			mark = " DISAGREES"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)%s", c.Metric, v, m, mark))
		any = true
	}
	if !any {
		return ""
	}
	return strings.Join(parts, ", ")
}

// disagreements counts the runs whose prediction disagreed with what they measured.
func disagreements(runs []*report.Run) int {
	n := 0
	for _, r := range runs {
		if r.Predicted != nil && r.Predicted.Disagreement {
			n++
		}
	}
	return n
}
