package diff

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

func TestDiffTable(t *testing.T) {
	t.Parallel()
	b := loadBase(t, baseRun("s", "a"), baseRun("s", "gone"))
	cur := baseRun("s", "a")
	cur.Metrics.Connections = 50
	cur.Metrics.LatencyMs.Mean = 100
	cur.Metrics.LatencyMs.Max = 4000
	cmp := &baseline.Comparer{Baseline: b}
	diffs := cmp.Diff([]*report.Run{cur, baseRun("s", "fresh")})
	var buf bytes.Buffer
	if err := DiffTable(&buf, diffs, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, re := range []string{
		`s +a +connections +1 +50 +\+4900.0% +\+2, at least \+3 +REGRESSED`,
		`s +a +latency_ms.mean +156 +100 +-35.9% +\+30% +improved`,
		`s +a +latency_ms.p50 +155 +155 +0 +\+20% +same`,
		`s +fresh +- +new`,
		`s +gone +- +missing`,
		`1 compared, 1 regressed, 1 improved, 1 new, 1 missing, 0 not comparable`,
	} {
		if !matches(re, out) {
			t.Errorf("table lacks /%s/:\n%s", re, out)
		}
	}
	if strings.Contains(out, "latency_ms.max") || strings.Contains(out, "rps") {
		t.Errorf("unchanged or informational metrics shown without --all:\n%s", out)
	}
	buf.Reset()
	if err := DiffTable(&buf, diffs, true); err != nil {
		t.Fatal(err)
	}
	if !matches(`s +a +latency_ms.max +400 +4000 +\+900.0% +off +off`, buf.String()) {
		t.Errorf("--all lacks the max:\n%s", buf.String())
	}
}
