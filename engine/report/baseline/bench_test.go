package baseline

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/internal/tolerance"
	"github.com/kalab-dev/kalab/engine/report"
)

// BenchmarkCompareRun is the cost added to each run by --baseline: every metric of one run
// against its baseline run.
func BenchmarkCompareRun(b *testing.B) {
	base := &Baseline{Path: "b", Runs: []report.Run{*baseRun("s", "v")}, index: map[string]int{runKey("s", "v"): 0}}
	cmp := &Comparer{Baseline: base, Tolerances: &Tolerances{Flags: map[string]tolerance.Tolerance{"errors": {Value: 1}}}}
	cur := baseRun("s", "v")
	cur.Metrics.Connections = 3
	b.ReportAllocs()
	for b.Loop() {
		if d := cmp.CompareRun(cur); d.State != gate.StateCompared {
			b.Fatal(d.State)
		}
	}
}

// BenchmarkLoadBaseline reads and schema-checks a 1,000-run baseline (a large suite).
func BenchmarkLoadBaseline(b *testing.B) {
	out := b.TempDir()
	w, err := report.Create(out, "base")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := w.WriteRun(baseRun("s", fmt.Sprintf("v%d", i))); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	p := filepath.Join(out, "base", "results.jsonl")
	st, _ := os.Stat(p)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}
