package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/gate"
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

// A verdict outranks its absence: one failed run beside a run without a verdict (an error,
// a run not run here) exits 1 and still names what has no verdict; with --fail-missing a
// not-run run is a missing baseline run, exit 1 as the table says; alone, no verdict is 3.
func TestFailureOutranksNoVerdict(t *testing.T) {
	failed := &report.Run{Scenario: "s", Variant: "a", Status: report.StatusFail}
	errored := &report.Run{Scenario: "s", Variant: "b", Status: report.StatusError, Error: "noisy: the link was late"}
	notRun := &report.Run{Scenario: "s", Variant: "c", Status: report.StatusNotRun, Reason: "node is not installed"}
	missing := []gate.RunDiff{{Scenario: "s", Variant: "c"}}
	for _, tc := range []struct {
		name    string
		runs    []*report.Run
		flags   runFlags
		missing []gate.RunDiff
		want    int
		stderr  string
	}{
		{"failed beside errored", []*report.Run{failed, errored}, runFlags{name: "run"}, nil, exitCheckFailed, "exit 1: a check failed"},
		{"failed beside not run", []*report.Run{failed, notRun}, runFlags{name: "run"}, nil, exitCheckFailed, "node is not installed"},
		{"errored alone", []*report.Run{errored}, runFlags{name: "run"}, nil, exitEngine, ""},
		{"not run alone", []*report.Run{notRun}, runFlags{name: "run"}, nil, exitEngine, "node is not installed"},
		{"not run, --fail-missing", []*report.Run{notRun}, runFlags{name: "run", failMissing: true}, missing, exitCheckFailed, "did not run (--fail-missing)"},
		{"not run, --allow-missing", []*report.Run{notRun}, runFlags{name: "run", allowMissing: true}, nil, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got := runExitCode(&tc.flags, &runner.Outcome{Runs: tc.runs}, tc.missing, nil, &stderr)
			if got != tc.want || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d; stderr %q, want it to say %q", got, tc.want, stderr.String(), tc.stderr)
			}
		})
	}
}
