package terminal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

func predictedRun(measured float64, verdict string) *report.Run {
	r := sampleRun()
	r.Record, r.RecordVersion, r.Scenario, r.Variant = "run", report.RecordVersion, "stale-race", "node-agent"
	r.Predicted = &report.Predicted{Rule: "sequential", LatenessMs: 15, Disagreement: verdict == report.ModelDisagree, Reason: "errors measured 22, predicted 15 (12..21 at the run's lateness)",
		Counts: []report.PredictedCount{
			{Metric: "errors", Predicted: true, Value: 15, Lo: 12, Hi: 21, Measured: measured, Verdict: verdict, Reason: "race", Window: "(1850 ms, 2000 ms)", Requests: []int{10, 20}, Uncertain: []int{30}},
			{Metric: "connections", Predicted: true, Value: 402, Hi: 402, AtMost: true, Measured: 398, Verdict: report.ModelAgree, Reason: "batches"},
			{Metric: "reused_requests", Verdict: report.ModelNotPredicted, Reason: "scheduling"},
		}}
	return r
}

// The summary shows each prediction beside its measurement, and a disagreement apart.
func TestSummaryShowsPredictedBesideMeasured(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Summary(&b, []*report.Run{predictedRun(17, report.ModelAgree)}, nil); err != nil {
		t.Fatal(err)
	}
	want := "stale-race / node-agent: errors 15 [12..21] (measured 17), connections at most 402 (398), reused_requests not predicted"
	if !strings.Contains(b.String(), want) || strings.Contains(b.String(), "model disagreement") {
		t.Errorf("summary:\n%s\nwant the line %q and no disagreement", b.String(), want)
	}
	b.Reset()
	if err := Summary(&b, []*report.Run{predictedRun(22, report.ModelDisagree)}, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"errors 15 [12..21] (measured 22) DISAGREES", "model disagreement: stale-race / node-agent: errors measured 22", "1 model disagreement;"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("summary:\n%s\nwant %q", b.String(), w)
		}
	}
}
