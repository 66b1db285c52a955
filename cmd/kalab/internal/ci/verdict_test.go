package ci

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// A record kalab wrote before not_evaluated ("skipped": true, "pass": true, status
// "skipped") reads as not evaluated and not run: a warning (not silence) in the
// annotations, skipped in JUnit.
func TestNotEvaluatedIsNeverCountedAsPassed(t *testing.T) {
	old := `{"record":"run","record_version":1,"kalab_version":"old","run_id":"r","scenario":"s","file":"s.yaml","variant":"real","params":{},"time_scale":1,"seed":1,"started_at":"2026-12-01T00:00:00Z","wall_ms":0,"status":"skipped","reason":"curl is not on PATH","metrics":{},"checks":[]}
{"record":"scenario","record_version":1,"kalab_version":"old","run_id":"r","scenario":"s","file":"s.yaml","runs":1,"status":"pass","checks":[{"kind":"compare","expr":"variant('real').errors == 0","pass":true,"observed":{},"error":"variant real did not complete (skipped)","skipped":true,"file":"s.yaml","line":3,"col":5}]}
`
	p := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := report.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	runs, scs := []*report.Run{&res.Runs[0]}, []*report.Scenario{&res.Scenarios[0]}
	var ann bytes.Buffer
	if err := Annotations(&ann, runs, scs, ""); err != nil {
		t.Fatal(err)
	}
	if a := ann.String(); strings.Count(a, "::warning ") != 2 || strings.Contains(a, "::error") {
		t.Errorf("annotations: want two warnings (the run not run, the check not evaluated), no error:\n%s", a)
	}
	var j bytes.Buffer
	if err := JUnit(&j, JUnitInput{Runs: runs, Scenarios: scs}); err != nil {
		t.Fatal(err)
	}
	if x := j.String(); strings.Count(x, "<skipped ") != 2 || !strings.Contains(x, `skipped message="1 of 1 checks not evaluated`) {
		t.Errorf("JUnit: want the run and the compare case skipped:\n%s", x)
	}
}
