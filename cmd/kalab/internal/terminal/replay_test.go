package terminal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// The summary names every kept bad line with its number and reason, and counts the rest:
// a bad line is never silently dropped.
func TestReplaySummaryListsBadLines(t *testing.T) {
	t.Parallel()
	p := &report.Replay{File: "access.log", Format: "nginx", Lines: 30, Requests: 5, Clients: 2, BadLines: 25}
	for i := range 20 {
		p.FirstBad = append(p.FirstBad, report.BadLine{Line: 6 + i, Reason: "no [time_local]"})
	}
	var b bytes.Buffer
	replaySummary(&b, []*report.Run{{Scenario: "s", Variant: "v", Replay: p}, {Scenario: "other", Variant: "v"}})
	out := b.String()
	for _, want := range []string{"s / v: access.log (nginx): 30 lines, 5 requests from 2 clients", "25 bad lines: 6 (no [time_local]), 7 (no [time_local])", "25 (no [time_local]) and 5 more"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "other") {
		t.Errorf("a run without a replay is listed:\n%s", out)
	}
}
