package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
)

// A compare check the machine's timing left without a verdict is never a pass: with every
// run passed, the invocation exits 3 and names the check; a failed check elsewhere still
// makes it 1 (a verdict was reached), and a check not evaluated because its run is in
// another shard does not change the exit code.
func TestUnjudgedCompareExitsThree(t *testing.T) {
	passed := []*report.Run{{Status: report.StatusPass}}
	unjudged := report.Check{Kind: "compare", Expr: "variant('a').latency_ms.p50 < 10", File: "s.yaml", Line: 7, Col: 5,
		NotEvaluated: "the link's measured lateness could change this check's verdict (a latency_ms.p50 up to 3.00 ms ...)"}
	elsewhere := report.Check{Kind: "compare", Expr: "variant('b').errors == 0", File: "s.yaml", Line: 8, Col: 5,
		NotEvaluated: "variant b did not run here (filtered out, or in another shard)"}
	failed := report.Check{Kind: "compare", Expr: "variant('a').errors == 1", File: "s.yaml", Line: 9, Col: 5}
	sc := func(status string, cs ...report.Check) []*report.Scenario {
		return []*report.Scenario{{Status: status, Checks: cs}}
	}
	for _, tc := range []struct {
		name string
		out  *runner.Outcome
		want int
	}{
		{"unjudged", &runner.Outcome{Runs: passed, Scenarios: sc(report.StatusNotEvaluated, unjudged)}, exitEngine},
		{"in another shard", &runner.Outcome{Runs: passed, Scenarios: sc(report.StatusNotEvaluated, elsewhere)}, exitOK},
		{"unjudged beside a failure", &runner.Outcome{Runs: passed, Scenarios: sc(report.StatusFail, unjudged, failed)}, exitCheckFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got := runExitCode(&runFlags{name: "run"}, tc.out, nil, nil, &stderr)
			if got != tc.want {
				t.Fatalf("exit %d, want %d (stderr %q)", got, tc.want, stderr.String())
			}
			if got == exitEngine && !strings.Contains(stderr.String(), "s.yaml:7:5: "+unjudged.Expr) {
				t.Errorf("stderr does not name the check: %q", stderr.String())
			}
		})
	}
}
