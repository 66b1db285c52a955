package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// loadOne loads one scenario file written from src.
func loadOne(t *testing.T, src string) *scenario.Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	return plan.Scenarios[0]
}

// disagreeing is a passed model run whose connections the oracle predicted 3 and the run
// measured 2, and whose errors it predicted and the run agreed with.
func disagreeing() *report.Run {
	return &report.Run{Status: report.StatusPass, Predicted: &report.Predicted{Disagreement: true, Counts: []report.PredictedCount{
		{Metric: "errors", Predicted: true, Value: 0, Lo: 0, Hi: 0, Measured: 0, Verdict: report.ModelAgree},
		{Metric: "connections", Predicted: true, Value: 3, Lo: 3, Hi: 4, Measured: 2, Verdict: report.ModelDisagree},
	}}}
}

// In a truth file (a compare, and a run of a real program) the oracle's disagreement with
// a model run fails it, with one check per count it got wrong, at the variant's client;
// in any other file it stays a note, and an agreeing run is left alone.
func TestOracleChecksFailATruthFilesModelRun(t *testing.T) {
	truth := loadOne(t, `name: t
variants:
  - name: model
    client: {preset: node-agent}
  - {name: real, client: {exec: node-agent}}
compare: ["variant('real').connections == variant('model').connections"]
`)
	rec := disagreeing()
	oracleChecks(rec, truth, truth.Runs[0])
	if rec.Status != report.StatusFail || len(rec.Checks) != 1 {
		t.Fatalf("truth file: status %s, checks %+v; want fail with one check", rec.Status, rec.Checks)
	}
	c := rec.Checks[0]
	if c.Pass || c.Expr != "oracle (truth file): connections >= 3 && connections <= 4" || c.Observed["connections"] != 2 || c.Line != 4 || c.Col != 5 {
		t.Errorf("check %+v: want a failed connections >= 3 && connections <= 4 at 4:5 observing 2", c)
	}

	agreeing := &report.Run{Status: report.StatusPass, Predicted: &report.Predicted{Counts: []report.PredictedCount{{Metric: "errors", Predicted: true, Verdict: report.ModelAgree}}}}
	oracleChecks(agreeing, truth, truth.Runs[0])
	if agreeing.Status != report.StatusPass || len(agreeing.Checks) != 0 {
		t.Errorf("agreeing run: status %s, checks %+v; want it left alone", agreeing.Status, agreeing.Checks)
	}

	for name, src := range map[string]string{
		"no real program": "name: t\nvariants:\n  - {name: a, client: {preset: node-agent}}\n  - {name: b, client: {preset: undici}}\ncompare: [\"variant('a').errors == variant('b').errors\"]\n",
		"no compare":      "name: t\nvariants:\n  - {name: model, client: {preset: node-agent}}\n  - {name: real, client: {exec: node-agent}}\n",
	} {
		sc := loadOne(t, src)
		rec := disagreeing()
		oracleChecks(rec, sc, sc.Runs[0])
		if rec.Status != report.StatusPass || len(rec.Checks) != 0 {
			t.Errorf("%s: status %s, checks %+v; want the disagreement left a note", name, rec.Status, rec.Checks)
		}
	}
}
