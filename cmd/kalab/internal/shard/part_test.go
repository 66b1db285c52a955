package shard

import (
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestShardWeights: --shard-weights balances by the wall times of a results file, scaled
// by the ratio of time scales, and falls back to the plan's estimate for runs it lacks.
func TestShardWeights(t *testing.T) {
	files, _ := scenario.FindFiles([]string{"../../../../scenarios"})
	base, err := report.ReadFile("../../../../results/baseline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	wall, clock := map[string]float64{}, map[string]string{}
	for _, r := range base.Runs {
		wall[r.Scenario+"/"+r.Variant] = r.WallMs
		clock[r.Scenario+"/"+r.Variant] = r.ClockName()
	}
	for _, scale := range []float64{0, 0.05} {
		plan, err := scenario.LoadFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		const weights = "../../../../results/baseline.jsonl"
		opt := runner.Options{TimeScale: scale, Host: runner.TestHost(t)}
		part, err := Select(plan, &opt, Spec{Index: 1, Count: 3}, weights, nil, files)
		if err != nil {
			t.Fatal(err)
		}
		if part.Manifest.Weights != weights {
			t.Errorf("weights %q, want the file", part.Manifest.Weights)
		}
		byName := map[string]*scenario.Run{}
		for _, sc := range plan.Scenarios {
			for _, r := range sc.Runs {
				byName[sc.Name+"/"+r.Variant] = r
			}
		}
		for _, r := range part.Manifest.Runs {
			k := r.Scenario + "/" + r.Variant
			want := wall[k]
			if scale > 0 && clock[k] == scenario.ClockReal {
				want *= scale / byName[k].Settings.TimeScale // a virtual run's wall time is CPU: it does not scale
			}
			if d := r.ExpectedMs - want; d < -1 || d > 1 {
				t.Errorf("scale %v: %s weighed %.0f ms, the results file says %.0f ms", scale, k, r.ExpectedMs, want)
			}
		}
	}
}
