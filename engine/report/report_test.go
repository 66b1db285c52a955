package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
)

func sampleRun() *Run {
	return &Run{
		KalabVersion: "test", RunID: "r1", Scenario: "s", File: "s.yaml", Variant: "v",
		Params:    json.RawMessage(`{"network":{},"server":{},"client":{},"load":{},"time_scale":1}`),
		TimeScale: 1, Seed: 7, StartedAt: time.Unix(0, 0).UTC(), WallMs: 12.5, Status: StatusFail,
		Metrics: check.Metrics{Requests: 10, Errors: 1, LatencyMs: check.Latency{P50: 150}},
		Checks: []Check{{Kind: "expect", Expr: "errors == 0", Pass: false, Observed: map[string]float64{"errors": 1},
			File: "s.yaml", Line: 3, Col: 5}},
		RequestsFile: RequestsPath("s", "v"),
	}
}

func TestWriteReadAndValidate(t *testing.T) {
	out := t.TempDir()
	w, err := Create(out, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRun(sampleRun()); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteScenario(&Scenario{KalabVersion: "test", RunID: "r1", Scenario: "s", File: "s.yaml", Runs: 1, Status: StatusPass, Checks: []Check{}}); err != nil {
		t.Fatal(err)
	}
	rw, err := w.Requests("s", "v")
	if err != nil {
		t.Fatal(err)
	}
	rw.Write(&Request{Seq: 0, StartMs: 0, LatencyMs: 150.2, Conn: 1, Attempts: 1, Status: 200, Bytes: 200})
	rw.Write(&Request{Seq: 1, StartMs: 151, LatencyMs: 3, Conn: 1, Reused: true, Attempts: 1, Class: "reset", Error: "read: connection reset by peer"})
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ValidateDir(t, filepath.Join(out, "r1"))

	res, err := ReadFile(filepath.Join(out, "latest", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 || len(res.Scenarios) != 1 || res.Runs[0].Metrics.Errors != 1 || res.Runs[0].Checks[0].Observed["errors"] != 1 {
		t.Fatalf("read back %+v", res)
	}
}

func TestReadRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"not json\n", "1: not a JSON object"},
		{`{"record":"run","record_version":2}` + "\n", "1: record_version 2"},
		{`{"record":"banana","record_version":1}` + "\n", `1: unknown record "banana"`},
		{"\n" + `{"record":"run","record_version":1,"surprise":1}` + "\n", `2: run record: json: unknown field "surprise"`},
	} {
		_, err := Read(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Read(%q) = %v; want %q", tc.in, err, tc.want)
		}
	}
}

func TestLatestMovesToNewestRun(t *testing.T) {
	out := t.TempDir()
	for _, id := range []string{"a", "b"} {
		w, err := Create(out, id)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	target, err := os.Readlink(filepath.Join(out, "latest"))
	if err != nil || target != "b" {
		t.Fatalf("latest -> %q, %v; want b", target, err)
	}
	if _, err := Create(out, "b"); err == nil {
		t.Fatal("Create reused an existing run directory")
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"rtt=150ms,keepalive=false": "rtt=150ms,keepalive=false",
		"a/b c":                     "a_b_c",
		"..":                        "_..",
		"":                          "_",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestSummaryShowsFailedChecks(t *testing.T) {
	var b bytes.Buffer
	if err := Summary(&b, []*Run{sampleRun()}, nil); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"SCENARIO", "0/1", "fail", "s.yaml:3:5: s / v: FAIL errors == 0 (errors=1)"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

func TestValidateFileCatchesSchemaBreaks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.jsonl")
	good, _ := json.Marshal(sampleRun())
	var bad map[string]any
	json.Unmarshal(good, &bad)
	bad["record"], bad["record_version"] = "run", 1
	delete(bad, "metrics")
	badLine, _ := json.Marshal(bad)
	os.WriteFile(p, append(badLine, '\n'), 0o644)
	if _, err := ValidateFile(p, false); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Fatalf("a run without metrics passed validation: %v", err)
	}
}

// TestSummaryTotalsAndCompare checks what a newcomer reads first: a compare row per
// scenario with its passed/total, wall time beside scenario time, and a totals line that
// counts runs by status and checks by kind, passing ones included.
func TestSummaryTotalsAndCompare(t *testing.T) {
	pass := sampleRun()
	pass.Variant, pass.Status, pass.WallMs = "w", StatusPass, 2276
	pass.Metrics.TotalMs = 22760 // time scale 0.1: ten times the wall time
	pass.Checks = []Check{{Kind: "expect", Pass: true}, {Kind: "expect", Pass: true}}
	broken := sampleRun()
	broken.Variant, broken.Status, broken.Checks = "x", StatusError, nil
	sc := &Scenario{Scenario: "s", Status: StatusFail, Checks: []Check{
		{Kind: "compare", Pass: true}, {Kind: "compare", Pass: true},
		{Kind: "compare", Expr: "variant('v').errors < 1", File: "s.yaml", Line: 9, Col: 3},
	}}
	var b bytes.Buffer
	if err := Summary(&b, []*Run{sampleRun(), pass, broken}, []*Scenario{sc}); err != nil {
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
