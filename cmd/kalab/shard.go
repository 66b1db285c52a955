package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shard"
)

// shardFlags are kalab run's flags for running one part of a split plan.
type shardFlags struct {
	spec    string
	fromEnv bool
	weights string
	parsed  shard.Spec
}

func (s *shardFlags) define(fs *pflag.FlagSet) {
	fs.StringVar(&s.spec, "shard", "", "run part I of N of the plan, e.g. 2/7 (1-based); merge the parts with kalab merge")
	fs.BoolVar(&s.fromEnv, "shard-from-env", false, "read the shard from "+shard.EnvIndex+" (1-based) or "+shard.EnvJobIndex+" (0-based, Kubernetes Indexed Jobs), and "+shard.EnvCount)
	fs.StringVar(&s.weights, "shard-weights", "", "balance the shards by the wall times in this results.jsonl (or run directory) instead of the plan's estimate")
}

func (s *shardFlags) check() error {
	var err error
	switch {
	case s.spec != "" && s.fromEnv:
		return errors.New("--shard and --shard-from-env: give one")
	case s.spec != "":
		s.parsed, err = shard.Parse(s.spec)
		if err != nil {
			return fmt.Errorf("--shard: %v", err)
		}
	case s.fromEnv:
		s.parsed, err = shard.FromEnv(os.Getenv)
		if err != nil {
			return fmt.Errorf("--shard-from-env: %v", err)
		}
	case s.weights != "":
		return errors.New("--shard-weights needs --shard or --shard-from-env")
	}
	return nil
}

func (s *shardFlags) sharded() bool { return s.parsed.Count > 0 }

// applyShard splits the (filtered) plan and keeps this shard's part of it.
func applyShard(f *runFlags, inv *invocation, files []string) error {
	// The invocation record names the shard and the whole plan (before --filter, as
	// runner.PlanHash hashes it), so every shard's record carries the same hash.
	inv.opt.PlanHash = runner.PlanHash(inv.plan, inv.opt)
	whole := filterPlan(inv.plan, inv.opt.Filter)
	if whole.Runs() == 0 {
		return runner.ErrNoRuns
	}
	weight := func(_ *scenario.Scenario, r *scenario.Run) time.Duration { return runner.Expected(r, inv.opt) }
	source := "plan"
	if f.weights != "" {
		measured, err := shardWeights(f.weights)
		if err != nil {
			return fmt.Errorf("--shard-weights: %v", err)
		}
		source = f.weights
		weight = func(sc *scenario.Scenario, r *scenario.Run) time.Duration {
			m, ok := measured[sc.Name+"/"+r.Variant]
			if !ok || m.ClockName() != runner.ClockOf(r, inv.opt) {
				return runner.Expected(r, inv.opt) // measured on the other clock: not this run's cost
			}
			if m.ClockName() == scenario.ClockVirtual {
				return time.Duration(m.WallMs * float64(time.Millisecond)) // CPU, whatever the time scale
			}
			// Most of a real run's wall time is simulated time, which scales with the time scale.
			scale := r.Settings.TimeScale
			if inv.opt.TimeScale > 0 {
				scale = inv.opt.TimeScale
			}
			if m.TimeScale > 0 && scale > 0 {
				return time.Duration(m.WallMs * scale / m.TimeScale * float64(time.Millisecond))
			}
			return time.Duration(m.WallMs * float64(time.Millisecond))
		}
	}
	spec := f.parsed
	split := shard.Plan(whole, spec.Count, weight)
	inv.plan = split.Select(whole, spec.Index)
	m := shard.NewManifest(split, spec.Index)
	m.KalabVersion = inv.opt.KalabVersion
	m.Paths = scenarioArgs(f.fs.Args())
	m.Files = slices.Sorted(slices.Values(files))
	m.TimeScale = inv.opt.TimeScale
	m.Seed = inv.opt.Seed
	m.Weights = source
	if inv.opt.Filter != nil {
		m.Filter = inv.opt.Filter.String()
	}
	m.PlanHash = shard.PlanHash(whole, shard.Overrides{TimeScale: inv.opt.TimeScale, Seed: inv.opt.Seed})
	inv.manifest = m
	inv.opt.Shard = spec.String()
	// The manifest goes in first, so a shard that crashes mid-way is still a shard to
	// kalab merge (which then names the runs it lost).
	inv.opt.Created = func(dir string) error { return writeManifest(inv, dir) }
	mine := map[string]bool{}
	for _, r := range m.Mine() {
		mine[r.Scenario+"/"+r.Variant] = true
	}
	inv.selected = func(sc, v string) bool { return mine[sc+"/"+v] }
	f.log.Info().Str("shard", spec.String()).Int("runs", inv.plan.Runs()).Int("of", whole.Runs()).
		Dur("expected", split.Load[spec.Index-1].Round(time.Second)).Str("weights", source).
		Float64("spread", split.Spread()).Msg("shard planned")
	return nil
}

// shardWeights reads measured wall times by "scenario/variant".
func shardWeights(path string) (map[string]report.Run, error) {
	base, err := report.LoadBaseline(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]report.Run, len(base.Runs))
	for _, r := range base.Runs {
		if r.Status == report.StatusPass || r.Status == report.StatusFail {
			out[r.Scenario+"/"+r.Variant] = r
		}
	}
	return out, nil
}

// filterPlan keeps the runs whose "scenario/variant" matches re (all when re is nil).
func filterPlan(plan *scenario.Plan, re *regexp.Regexp) *scenario.Plan {
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
func writeManifest(inv *invocation, dir string) error {
	inv.manifest.RunID = filepath.Base(dir)
	return inv.manifest.Write(dir)
}

// emptyShard handles a shard the split left without runs (more shards than runs): it writes
// an empty results directory with its manifest, so kalab merge sees the shard as present.
func emptyShard(f *runFlags, inv *invocation, stdout, stderr io.Writer) int {
	runID := inv.opt.RunID
	if runID == "" {
		runID = report.NewRunID(time.Now())
	}
	w, err := report.Create(f.out, runID)
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return exitEngine
	}
	err = writeManifest(inv, w.Dir)
	if err == nil {
		now := time.Now().UTC()
		err = w.Finish(&report.Invocation{KalabVersion: inv.opt.KalabVersion, RunID: runID, State: report.InvocationEnded,
			Completed: true, PlanHash: inv.opt.PlanHash, Shard: inv.opt.Shard, StartedAt: now, EndedAt: &now})
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return exitEngine
	}
	dir := w.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(stdout, "shard %d/%d has no runs: the plan has fewer runs than shards\n\nresults: %s\n", inv.manifest.Shard, inv.manifest.Shards, dir)
	return exitOK
}
