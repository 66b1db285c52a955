package diff

import (
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// PlanTolerances collects the baseline: overrides of every loaded scenario, under the
// --tolerance flags.
func PlanTolerances(plan *scenario.Plan, flags map[string]scenario.Tolerance) *baseline.Tolerances {
	t := &baseline.Tolerances{Flags: flags, Scenarios: map[string]baseline.ScenarioTolerances{}}
	if plan != nil {
		for _, s := range plan.Scenarios {
			if len(s.Baseline) > 0 {
				t.Scenarios[s.Name] = baseline.ScenarioTolerances{File: s.File, Rules: s.Baseline}
			}
		}
	}
	return t
}
