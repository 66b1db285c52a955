package shard

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Part is one shard's part of a plan (kalab run --shard): its runs, its manifest, and
// what the split says about it.
type Part struct {
	Plan     *scenario.Plan // this shard's runs
	Manifest *Manifest
	Whole    int           // the runs of the whole (filtered) plan
	Expected time.Duration // this part's expected wall time
	Spread   float64       // Split.Spread
	mine     map[string]bool
}

// Mine reports whether a run belongs to this part.
func (p *Part) Mine(scenarioName, variant string) bool { return p.mine[scenarioName+"/"+variant] }

// Select splits plan (before --filter, which opt carries) and keeps part spec of it,
// balanced by the plan's estimate or, with weights, by the wall times measured in that
// results.jsonl (or run directory). It sets the options' PlanHash, Shard and Created (which
// writes the manifest beside results.jsonl before any run starts, so that a shard that
// crashes is still a shard to kalab merge). paths are the files or directories asked for,
// files the scenario files loaded from them.
func Select(plan *scenario.Plan, opt *runner.Options, spec Spec, weights string, paths, files []string) (*Part, error) {
	// The invocation record names the shard and the whole plan (before --filter, as
	// runner.PlanHash hashes it), so every shard's record carries the same hash.
	opt.PlanHash = runner.PlanHash(plan, *opt)
	whole := Filter(plan, opt.Filter)
	if whole.Runs() == 0 {
		return nil, runner.ErrNoRuns
	}
	copt := opt.Compile()
	weight, source := Weight(func(sc *scenario.Scenario, r *scenario.Run) time.Duration { return compile.One(sc, r, copt).Expected }), "plan"
	if weights != "" {
		measured, err := measuredWeights(weights, *opt)
		if err != nil {
			return nil, fmt.Errorf("--shard-weights: %v", err)
		}
		weight, source = measured, weights
	}
	split := Plan(whole, spec.Count, weight)
	m := NewManifest(split, spec.Index)
	m.KalabVersion, m.Paths, m.Files = opt.KalabVersion, paths, slices.Sorted(slices.Values(files))
	m.TimeScale, m.Seed, m.Weights = opt.TimeScale, opt.Seed, source
	if opt.Filter != nil {
		m.Filter = opt.Filter.String()
	}
	m.PlanHash = PlanHash(whole, Overrides{TimeScale: opt.TimeScale, Seed: opt.Seed})
	opt.Shard = spec.String()
	opt.Created = func(dir string) error { return writeManifest(m, dir) }
	p := &Part{Plan: split.Select(whole, spec.Index), Manifest: m, Whole: whole.Runs(),
		Expected: split.Load[spec.Index-1], Spread: split.Spread(), mine: map[string]bool{}}
	for _, r := range m.Mine() {
		p.mine[r.Scenario+"/"+r.Variant] = true
	}
	return p, nil
}

// measuredWeights weighs each run by its wall time in the results at path, where it ran
// on the clock it runs on here; the plan's estimate otherwise.
func measuredWeights(path string, opt runner.Options) (Weight, error) {
	base, err := baseline.Load(path)
	if err != nil {
		return nil, err
	}
	measured := make(map[string]report.Run, len(base.Runs))
	for _, r := range base.Runs {
		if r.Status == report.StatusPass || r.Status == report.StatusFail {
			measured[r.Scenario+"/"+r.Variant] = r
		}
	}
	copt := opt.Compile()
	return func(sc *scenario.Scenario, r *scenario.Run) time.Duration {
		m, ok := measured[sc.Name+"/"+r.Variant]
		if c := compile.One(sc, r, copt); !ok || m.ClockName() != c.Settings.Clock {
			return c.Expected // measured on the other clock: not this run's cost
		}
		if m.ClockName() == scenario.ClockVirtual {
			return time.Duration(m.WallMs * float64(time.Millisecond)) // CPU, whatever the time scale
		}
		// Most of a real run's wall time is simulated time, which scales with the time scale.
		scale := r.Settings.TimeScale
		if opt.TimeScale > 0 {
			scale = opt.TimeScale
		}
		if m.TimeScale > 0 && scale > 0 {
			return time.Duration(m.WallMs * scale / m.TimeScale * float64(time.Millisecond))
		}
		return time.Duration(m.WallMs * float64(time.Millisecond))
	}, nil
}

// Filter keeps the runs whose "scenario/variant" matches re (all when re is nil).
func Filter(plan *scenario.Plan, re *regexp.Regexp) *scenario.Plan {
	if re == nil {
		return plan
	}
	out := &scenario.Plan{}
	for _, sc := range plan.Scenarios {
		part := *sc
		part.Runs = nil
		for _, r := range sc.Runs {
			if re.MatchString(sc.Name + "/" + r.Variant) {
				part.Runs = append(part.Runs, r)
			}
		}
		if len(part.Runs) > 0 {
			out.Scenarios = append(out.Scenarios, &part)
		}
	}
	return out
}

// writeManifest puts shard.json beside results.jsonl.
func writeManifest(m *Manifest, dir string) error {
	m.RunID = filepath.Base(dir)
	return m.Write(dir)
}

// WriteEmpty records a part the split left without runs (more shards than runs): an empty
// results directory with its manifest, so kalab merge sees the shard as present. It
// returns the directory.
func (p *Part) WriteEmpty(opt runner.Options) (string, error) {
	runID := opt.RunID
	if runID == "" {
		runID = report.NewRunID(time.Now())
	}
	w, err := report.Create(opt.Out, runID)
	if err != nil {
		return "", err
	}
	err = writeManifest(p.Manifest, w.Dir)
	if err == nil {
		now := time.Now().UTC()
		err = w.Finish(&report.Invocation{KalabVersion: opt.KalabVersion, RunID: runID, State: report.InvocationEnded,
			Completed: true, PlanHash: opt.PlanHash, Shard: opt.Shard, StartedAt: now, EndedAt: &now})
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return w.Dir, err
}
