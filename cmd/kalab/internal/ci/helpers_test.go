package ci

import (
	"fmt"
	"io"
	"testing"

	"github.com/kalab-dev/kalab/engine/testkit/reporttest"

	"github.com/kalab-dev/kalab/engine/report"
)

func baseRun(sc, variant string) *report.Run { return reporttest.Run(sc, variant) }

// BenchmarkJUnit writes the report of 1,000 runs, one in ten failing.
func BenchmarkJUnit(b *testing.B) {
	in := JUnitInput{}
	for i := range 1000 {
		r := baseRun(fmt.Sprintf("s%d", i/10), fmt.Sprintf("v%d", i))
		if i%10 == 0 {
			r.Status = report.StatusFail
			r.Checks = []report.Check{{Kind: "expect", Expr: "errors == 0", Observed: map[string]float64{"errors": 3}, File: "s.yaml", Line: 4, Col: 5}}
		}
		in.Runs = append(in.Runs, r)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := JUnit(io.Discard, in); err != nil {
			b.Fatal(err)
		}
	}
}
