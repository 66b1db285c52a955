package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func predictedRun(measured float64, verdict string) *Run {
	r := sampleRun()
	r.Record, r.RecordVersion, r.Scenario, r.Variant = "run", RecordVersion, "stale-race", "node-agent"
	r.Predicted = &Predicted{Rule: "sequential", LatenessMs: 15, Disagreement: verdict == ModelDisagree, Reason: "errors measured 22, predicted 15 (12..21 at the run's lateness)",
		Counts: []PredictedCount{
			{Metric: "errors", Predicted: true, Value: 15, Lo: 12, Hi: 21, Measured: measured, Verdict: verdict, Reason: "race", Window: "(1850 ms, 2000 ms)", Requests: []int{10, 20}, Uncertain: []int{30}},
			{Metric: "connections", Predicted: true, Value: 402, Hi: 402, AtMost: true, Measured: 398, Verdict: ModelAgree, Reason: "batches"},
			{Metric: "reused_requests", Verdict: ModelNotPredicted, Reason: "scheduling"},
		}}
	return r
}

// A run record with a prediction fits the result schema.
func TestPredictedFitsTheSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	line, err := json.Marshal(predictedRun(22, ModelDisagree))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(path, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := validateFile(path, false); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(line), `"verdict":"disagree"`, `"verdict":"maybe"`, 1)
	if err := os.WriteFile(path, []byte(bad+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := validateFile(path, false); err == nil {
		t.Error("a verdict outside agree/disagree/not-predicted passed the schema")
	}
}
