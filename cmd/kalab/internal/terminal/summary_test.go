package terminal

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

func TestSummaryShowsFailedChecks(t *testing.T) {
	var b bytes.Buffer
	if err := Summary(&b, []*report.Run{sampleRun()}, nil); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"SCENARIO", "0/1", "fail", "s.yaml:3:5: s / v: FAIL errors == 0 (errors=1)"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// TestSummaryTotalsAndCompare checks what a newcomer reads first: a compare row per
// scenario with its passed/total, wall time beside scenario time, and a totals line that
// counts runs by status and checks by kind, passing ones included.
func TestSummaryTotalsAndCompare(t *testing.T) {
	pass := sampleRun()
	pass.Variant, pass.Status, pass.WallMs = "w", report.StatusPass, 2276
	pass.Metrics.TotalMs = 22760 // time scale 0.1: ten times the wall time
	pass.Checks = []report.Check{{Kind: "expect", Pass: true}, {Kind: "expect", Pass: true}}
	broken := sampleRun()
	broken.Variant, broken.Status, broken.Checks = "x", report.StatusError, nil
	sc := &report.Scenario{Scenario: "s", Status: report.StatusFail, Checks: []report.Check{
		{Kind: "compare", Pass: true}, {Kind: "compare", Pass: true},
		{Kind: "compare", Expr: "variant('v').errors < 1", File: "s.yaml", Line: 9, Col: 3},
	}}
	var b bytes.Buffer
	if err := Summary(&b, []*report.Run{sampleRun(), pass, broken}, []*report.Scenario{sc}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`TOTAL s +WALL s +CHECKS`,
		`(?m)^ +s +w .* 22\.76 +2\.28 +2/2 +pass *$`,
		`(?m)^ +s +\(compare\) +2/3 +fail *$`,
		`s\.yaml:9:3: s \(compare\): FAIL variant\('v'\)\.errors < 1`,
		`(?m)^3 runs: 1 pass, 1 fail, 1 error; expect checks 2/3, compare checks 2/3$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("summary does not match %s:\n%s", re, out)
		}
	}
	// The compare row follows the scenario's last run, once.
	if i, j := strings.Index(out, " x "), strings.Index(out, "(compare)"); i < 0 || j < i || strings.Count(out, "(compare)  ") != 1 {
		t.Errorf("compare row not once after the scenario's last run:\n%s", out)
	}
}

func TestSummaryCountsReruns(t *testing.T) {
	t.Parallel()
	runs := []*report.Run{
		{Scenario: "s", Variant: "a", Status: report.StatusPass, Timing: &report.Timing{Attempt: 2, Reruns: []string{"attempt 1: link late"}}},
		{Scenario: "s", Variant: "b", Status: report.StatusError, Error: "noisy", Timing: &report.Timing{Attempt: 2, Noisy: true, Reruns: []string{"attempt 1: x", "attempt 2: y"}}},
		{Scenario: "s", Variant: "c", Status: report.StatusPass, Timing: &report.Timing{Attempt: 1}},
	}
	var b bytes.Buffer
	if err := Summary(&b, runs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"timing: 2 of 3 runs rerun because", "1 still noisy", "s / a: attempt 1: link late", "s / b: rerun, still noisy: no verdict (2 attempts)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
