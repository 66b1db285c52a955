package ci

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
)

func baseRun(sc, variant string) *report.Run {
	return &report.Run{
		KalabVersion: "test", RunID: "base", Scenario: sc, File: sc + ".yaml", Variant: variant,
		Params:    json.RawMessage(`{"network":{},"server":{},"client":{},"load":{},"time_scale":1}`),
		TimeScale: 1, Seed: 7, StartedAt: time.Unix(0, 0).UTC(), WallMs: 1000, Status: report.StatusPass,
		Metrics: check.Metrics{Requests: 200, OK: 200, Connections: 1, ReusedRequests: 199, ReuseRatio: 0.995,
			LatencyMs: check.Latency{Min: 150, P50: 155, P90: 160, P95: 170, P99: 200, Max: 400, Mean: 156},
			TotalMs:   31000, RPS: 6.45},
		Checks: []report.Check{},
	}
}

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
