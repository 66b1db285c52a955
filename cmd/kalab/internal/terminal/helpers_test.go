package terminal

import (
	"encoding/json"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
)

// sampleRun is a failed run of 10 requests with one failed expect check.
func sampleRun() *report.Run {
	return &report.Run{
		KalabVersion: "test", RunID: "r1", Scenario: "s", File: "s.yaml", Variant: "v",
		Params:    json.RawMessage(`{"network":{},"server":{},"client":{},"load":{},"time_scale":1}`),
		TimeScale: 1, Seed: 7, StartedAt: time.Unix(0, 0).UTC(), WallMs: 12.5, Status: report.StatusFail,
		Metrics: check.Metrics{Requests: 10, Errors: 1, LatencyMs: check.Latency{P50: 150}},
		Checks: []report.Check{{Kind: "expect", Expr: "errors == 0", Pass: false, Observed: map[string]float64{"errors": 1},
			File: "s.yaml", Line: 3, Col: 5}},
		RequestsFile: report.RequestsPath("s", "v"),
	}
}
