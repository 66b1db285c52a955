package terminal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// A record kalab wrote before not_evaluated ("skipped": true, "pass": true, status
// "skipped") reads as not evaluated and not run, and every output shows it so: never a
// pass in the totals or the summary (cmd/kalab/internal/ci shows it in the annotations and JUnit).
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
	run, sc := &res.Runs[0], &res.Scenarios[0]
	c := sc.Checks[0]
	if run.Status != report.StatusNotRun || sc.Status != report.StatusNotEvaluated || c.Pass || c.Verdict() != report.VerdictNotEvaluated ||
		c.NotEvaluated != "variant real did not complete (skipped)" {
		t.Fatalf("read as run %s, scenario %s, check %+v (verdict %s); want not-run, not-evaluated, not evaluated with the reason",
			run.Status, sc.Status, c, c.Verdict())
	}
	runs, scs := []*report.Run{run}, []*report.Scenario{sc}
	if got := totalsLine(runs, scs); !strings.Contains(got, "1 not-run") || !strings.Contains(got, "compare checks 0/0 (1 not evaluated)") {
		t.Errorf("totals %q", got)
	}
	var sum bytes.Buffer
	if err := Summary(&sum, runs, scs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0/0 +1 not evaluated", "s / real: NOT RUN: curl is not on PATH", "NOT EVALUATED variant('real').errors == 0"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
}
