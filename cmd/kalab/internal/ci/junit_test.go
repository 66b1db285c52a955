package ci

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// failingInput is a report with every kind of outcome: a pass, a failed expect with a
// baseline regression, an errored run, a failed compare, and a missing baseline run.
func failingInput() JUnitInput {
	pass := baseRun("reuse", "keepalive")
	fail := baseRun("reuse", "close")
	fail.Status = report.StatusFail
	fail.Checks = []report.Check{
		{Kind: "expect", Expr: "connections == 1", Pass: false, Observed: map[string]float64{"connections": 200}, File: "reuse.yaml", Line: 9, Col: 5},
		{Kind: "baseline", Expr: "total_ms <= 34100 (baseline 31000 +10%)", Pass: false, Observed: map[string]float64{"total_ms": 90000, "baseline": 31000}, File: "reuse.yaml", Line: 1, Col: 1},
		{Kind: "expect", Expr: "errors == 0", Pass: true, Observed: map[string]float64{"errors": 0}, File: "reuse.yaml", Line: 8, Col: 5},
	}
	broken := baseRun("stale", "a")
	broken.Status, broken.Error = report.StatusError, "listen tcp 127.0.0.1:0: too many open files <&> ]]> \x01"
	return JUnitInput{
		Runs: []*report.Run{pass, fail, broken},
		Scenarios: []*report.Scenario{{Scenario: "reuse", File: "reuse.yaml", Runs: 2, Status: report.StatusFail, Checks: []report.Check{
			{Kind: "compare", Expr: "variant('close').total_ms > 2 * variant('keepalive').total_ms", Pass: false,
				Observed: map[string]float64{"variant('close').total_ms": 40000, "variant('keepalive').total_ms": 31000}, File: "reuse.yaml", Line: 12, Col: 5},
		}}},
		Missing:     []gate.RunDiff{{Scenario: "gone", Variant: "v", File: "gone.yaml", State: gate.StateMissing, BaselineRunID: "base"}},
		FailMissing: true,
	}
}

// TestJUnitMatchesXSD validates a failing report against the Jenkins JUnit schema that CI
// systems read (testdata/junit-10.xsd) with xmllint.
func TestJUnitMatchesXSD(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JUnit(&buf, failingInput()); err != nil {
		t.Fatal(err)
	}
	xmllint := testci.Program(t, "xmllint")
	p := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit-10.xsd", p).CombinedOutput()
	if err != nil {
		t.Fatalf("xmllint rejects the report: %v\n%s\n%s", err, out, buf.String())
	}
	// The check must be able to fail: a report without the required tests attribute.
	bad := strings.Replace(buf.String(), `<testsuite name="reuse" tests="3"`, `<testsuite name="reuse"`, 1)
	if bad == buf.String() {
		t.Fatal("test setup: the testsuite element was not found")
	}
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit-10.xsd", p).CombinedOutput(); err == nil {
		t.Fatalf("xmllint accepted a testsuite without tests=: %s", out)
	}
}

// TestJUnitContent reads the report back and checks what each test case carries.
func TestJUnitContent(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := JUnit(&buf, failingInput()); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if got.Tests != 5 || got.Failures != 3 || got.Errors != 1 || len(got.Suites) != 3 {
		t.Fatalf("totals tests=%d failures=%d errors=%d suites=%d\n%s", got.Tests, got.Failures, got.Errors, len(got.Suites), buf.String())
	}
	reuse := got.Suites[0]
	if reuse.Name != "reuse" || reuse.File != "reuse.yaml" || reuse.Tests != 3 || reuse.Failures != 2 || len(reuse.Cases) != 3 {
		t.Fatalf("reuse suite %+v", reuse)
	}
	if c := reuse.Cases[0]; c.Name != "keepalive" || c.Failure != nil || c.Error != nil || (c.SystemOut == nil || !strings.Contains(c.SystemOut.Text, "connections=1\n")) {
		t.Errorf("passing case %+v", c)
	}
	c := reuse.Cases[1]
	if c.Name != "close" || c.Classname != "reuse" || c.Line != "9" || c.Failure == nil {
		t.Fatalf("failing case %+v", c)
	}
	if c.Failure.Message != "FAIL connections == 1 (connections=200) (and 1 more)" || c.Failure.Type != "expect" {
		t.Errorf("failure message %q type %q", c.Failure.Message, c.Failure.Type)
	}
	for _, want := range []string{
		"reuse.yaml:9:5: [expect] FAIL connections == 1 (connections=200)",
		"reuse.yaml:1:1: [baseline] FAIL total_ms <= 34100 (baseline 31000 +10%) (baseline=31000, total_ms=90000)",
	} {
		if !strings.Contains(c.Failure.Text, want) {
			t.Errorf("failure text lacks %q:\n%s", want, c.Failure.Text)
		}
	}
	if strings.Contains(c.Failure.Text, "errors == 0") {
		t.Error("a passing check is listed as a failure")
	}
	if c := reuse.Cases[2]; c.Name != "compare" || c.Failure == nil || !strings.Contains(c.Failure.Text, "variant('close').total_ms=40000") {
		t.Errorf("compare case %+v", c)
	}
	stale := got.Suites[1]
	if stale.Errors != 1 || stale.Cases[0].Error == nil || !strings.Contains(stale.Cases[0].Error.Message, "too many open files <&>") {
		t.Errorf("errored case %+v", stale)
	}
	gone := got.Suites[2]
	if gone.Failures != 1 || gone.Cases[0].Failure == nil || !strings.Contains(gone.Cases[0].Failure.Message, "did not run") {
		t.Errorf("missing case %+v", gone)
	}

	// Without --fail-missing a missing run is skipped, not failed.
	in := failingInput()
	in.FailMissing = false
	buf.Reset()
	if err := JUnit(&buf, in); err != nil {
		t.Fatal(err)
	}
	got = junitSuites{}
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if g := got.Suites[2]; g.Skipped != 1 || g.Failures != 0 || g.Cases[0].Skipped == nil {
		t.Errorf("missing without fail: %+v", g)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestJUnitReportsWriteErrors(t *testing.T) {
	t.Parallel()
	if err := JUnit(failWriter{}, failingInput()); err == nil || !strings.Contains(err.Error(), "write JUnit report") {
		t.Fatalf("err = %v", err)
	}
}

// A run whose real program ran at a version its preset was not verified against carries the
// note in its case's output, and the scenario's compare case shows it beside its verdict.
func TestJUnitShowsVersionNotes(t *testing.T) {
	t.Parallel()
	in := failingInput()
	note := report.UnverifiedVersionNote("undici", "6.99.0", "undici", "6.24.1 on 2026-12-01")
	in.Runs[0].Notes = []string{"exec client: ran at time scale 1, not 0.5", note}
	var buf bytes.Buffer
	if err := JUnit(&buf, in); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	cases := got.Suites[0].Cases
	if c := cases[0]; c.SystemOut == nil || !strings.Contains(c.SystemOut.Text, "note: "+note+"\n") || !strings.Contains(c.SystemOut.Text, "note: exec client") {
		t.Errorf("the run's case does not carry its notes: %+v", c.SystemOut)
	}
	cmp := cases[2]
	if cmp.Name != "compare" || cmp.Failure == nil {
		t.Fatalf("compare case %+v", cmp)
	}
	if !strings.Contains(cmp.Failure.Text, "\nnote: keepalive: "+note) {
		t.Errorf("the compare failure does not show the version note: %q", cmp.Failure.Text)
	}
	if cmp.SystemOut == nil || !strings.Contains(cmp.SystemOut.Text, "note: keepalive: "+note) {
		t.Errorf("the compare case's output does not show the version note: %+v", cmp.SystemOut)
	}
	if strings.Contains(cmp.Failure.Text, "time scale") {
		t.Errorf("the compare failure shows a note that is not about a version: %q", cmp.Failure.Text)
	}
}
