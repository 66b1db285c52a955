package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// predictedFile holds how many counts the oracle predicts over the bundled plan's runs on
// the virtual clock. It changes in the same commit as what moves it: a prediction rule
// dropped (or a case newly declared "not predicted") lowers the count and fails the test
// until the number is lowered on purpose.
const predictedFile = "testdata/bundled-predictions.json"

// bundledPredictions is predictedFile's content.
type bundledPredictions struct {
	Runs         int `json:"runs"`          // runs of the bundled plan on the virtual clock
	Predicted    int `json:"predicted"`     // counts the oracle predicts over them
	NotPredicted int `json:"not_predicted"` // counts it declines to predict, each with its reason
}

// virtualPart is the part of plan that goes on the virtual clock under opt.
func virtualPart(plan *scenario.Plan, opt Options) *scenario.Plan {
	out := &scenario.Plan{}
	for _, sc := range plan.Scenarios {
		c := *sc
		c.Runs, c.Compare = nil, nil
		for _, r := range sc.Runs {
			if compile.One(sc, r, opt.Compile()).Virtual() {
				c.Runs = append(c.Runs, r)
			}
		}
		if len(c.Runs) > 0 {
			out.Scenarios = append(out.Scenarios, &c)
		}
	}
	return out
}

// TestBundledPredictionsExact runs every bundled run that goes on the virtual clock (the
// suite and the truth files) and holds the oracle to it: every count it predicts is
// measured exactly (no timer is late there, so no band is allowed), and the number of
// counts it predicts is the committed one. Set KALAB_WRITE_PREDICTIONS=1 to write the new
// number after a change that moves it on purpose.
func TestBundledPredictionsExact(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	truth, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "truth", "*.yaml"))
	plan, err := scenario.LoadFiles(append(files, truth...))
	if err != nil {
		t.Fatal(err)
	}
	o := virtualOpts(t)
	o.SkipRequests = true
	plan = virtualPart(plan, o)
	out, err := Execute(context.Background(), plan, o)
	if err != nil {
		t.Fatal(err)
	}
	var got bundledPredictions
	for _, r := range out.Runs {
		got.Runs++
		if r.Predicted == nil || r.Status == report.StatusError {
			t.Errorf("%s/%s: %s %s, no prediction", r.Scenario, r.Variant, r.Status, r.Error)
			continue
		}
		exactPredictions(t, r)
		for _, c := range r.Predicted.Counts {
			if c.Predicted {
				got.Predicted++
			} else {
				got.NotPredicted++
			}
		}
	}
	if os.Getenv("KALAB_WRITE_PREDICTIONS") == "1" {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(predictedFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want bundledPredictions
	b, err := os.ReadFile(predictedFile)
	if err == nil {
		err = json.Unmarshal(b, &want)
	}
	if err != nil {
		t.Fatalf("%s: %v", predictedFile, err)
	}
	if got != want {
		t.Errorf("over the bundled plan's virtual runs the oracle predicts %+v; %s says %+v: a count no longer predicted is a prediction lost (change the number in the same commit only when that is meant)", got, predictedFile, want)
	}
}
