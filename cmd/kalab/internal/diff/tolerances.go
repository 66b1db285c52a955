package diff

import (
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// PlanTolerances collects the baseline: overrides of every loaded scenario, under the
// --tolerance flags.
func PlanTolerances(plan *scenario.Plan, flags map[string]scenario.Tolerance) *report.Tolerances {
	t := &report.Tolerances{Flags: flags, Scenarios: map[string]report.ScenarioTolerances{}}
	if plan != nil {
		for _, s := range plan.Scenarios {
			if len(s.Baseline) > 0 {
				t.Scenarios[s.Name] = report.ScenarioTolerances{File: s.File, Rules: s.Baseline}
			}
		}
	}
	return t
}
