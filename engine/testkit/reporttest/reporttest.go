// Package reporttest builds the run records and baselines that tests of the packages
// reading results (the baseline comparison, JUnit and annotations) start from.
//
// A test kit: the engine's tests and the command line's both use it; it is kalab's own, not
// a stable API for other modules.
package reporttest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// Run is a passed run of 200 requests on one reused connection at about 155 ms each.
func Run(sc, variant string) *report.Run {
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

// Baseline writes runs as a results file and loads it as a baseline.
func Baseline(t *testing.T, runs ...*report.Run) *baseline.Baseline {
	t.Helper()
	w, err := report.Create(t.TempDir(), "base")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := w.WriteRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := baseline.Load(w.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
