package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/shard"
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
	part, err := shard.Select(inv.plan, &inv.opt, f.parsed, f.weights, scenarioArgs(f.fs.Args()), files)
	if err != nil {
		return err
	}
	inv.plan, inv.part = part.Plan, part
	f.log.Info().Str("shard", inv.opt.Shard).Int("runs", inv.plan.Runs()).Int("of", part.Whole).
		Dur("expected", part.Expected.Round(time.Second)).Str("weights", part.Manifest.Weights).
		Float64("spread", part.Spread).Msg("shard planned")
	return nil
}

// emptyShard handles a shard the split left without runs (more shards than runs): it writes
// an empty results directory with its manifest, so kalab merge sees the shard as present.
func emptyShard(inv *invocation, stdout, stderr io.Writer) int {
	dir, err := inv.part.WriteEmpty(inv.opt)
	if err != nil {
		fmt.Fprintf(stderr, "kalab run: %v\n", err)
		return exitEngine
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(stdout, "shard %d/%d has no runs: the plan has fewer runs than shards\n\nresults: %s\n", inv.part.Manifest.Shard, inv.part.Manifest.Shards, dir)
	return exitOK
}
