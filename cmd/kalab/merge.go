package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/diff"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/shard"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/runner"
)

// cmdMerge is `kalab merge DIR... --out DIR`: the results of the shards of one split, put
// back together as one results directory and gated like a single kalab run.
func cmdMerge(args []string, stdout, stderr io.Writer) int {
	f, lo := mergeFlags(stdout, stderr)
	if ok, code := parseFlags(f.fs, args); !ok {
		return code
	}
	invalid := func(err error) int {
		fmt.Fprintf(stderr, "kalab merge: %v\n", err)
		return exitInvalid
	}
	log, err := lo.logger(stderr)
	if err != nil {
		return invalid(err)
	}
	f.log = log
	if err := checkMergeArgs(f); err != nil {
		return invalid(err)
	}
	shards, err := shard.Find(f.fs.Args())
	if err != nil {
		return invalid(err)
	}
	m, inv, err := mergedInvocation(f, shards, stderr)
	if err != nil {
		return invalid(err)
	}
	if err := m.Collect(); err != nil {
		return invalid(err)
	}
	outcome, err := m.Write(f.out)
	if outcome == nil {
		fmt.Fprintf(stderr, "kalab merge: %v\n", err)
		return exitEngine
	}
	missing, rerr := reportRun(f, inv, outcome, stdout)
	if err == nil {
		err = rerr
	}
	printMerged(stdout, shards, m.Recorded(), m.Gaps, outcome.Dir)
	code := runExitCode(f, outcome, missing, err, stderr)
	if gaps := m.Gaps; len(gaps) > 0 && !f.allowPartial && (code == exitOK || code == exitCheckFailed) {
		fmt.Fprintf(stderr, "kalab merge: the merged results are incomplete: %d shard%s or runs missing (--allow-partial gates them anyway)\n", len(gaps), plural(len(gaps)))
		return exitEngine
	}
	return code
}

// mergeFlags declares kalab merge's flags: the gate's flags of kalab run, without the ones
// that choose or run scenarios.
func mergeFlags(stdout, stderr io.Writer) (*runFlags, *logOptions) {
	fs, lo := flagSet("merge", "merge DIR... [--out DIR]  (shard run directories, or directories holding them)", stdout, stderr)
	f := &runFlags{fs: fs, name: "merge"}
	fs.StringVar(&f.out, "out", "results", "directory that receives <run-id>/results.jsonl and the requests files")
	fs.StringVar(&f.baselinePath, "baseline", "", "compare each merged run with the same scenario and variant in this results.jsonl (or run directory)")
	fs.StringArrayVar(&f.tolerances, "tolerance", nil, "METRIC=TOLERANCE for --baseline (repeatable; overrides scenario files)")
	fs.BoolVar(&f.failMissing, "fail-missing", false, "with --baseline: fail when a run of the baseline is not in the merged results")
	fs.StringVar(&f.files.JUnit, "junit", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.files.HTML, "html", "", "also write the HTML report (kalab report) of the merged results to this file")
	f.files.DefineMetrics(fs)
	fs.BoolVar(&f.allowPartial, "allow-partial", false, "accept partial inputs: gate what the shards recorded when a shard or some of its runs are missing (exit 3 otherwise), and a baseline whose invocation did not complete")
	return f, lo
}

// checkMergeArgs rejects what kalab merge cannot do before it reads anything.
func checkMergeArgs(f *runFlags) error {
	if f.fs.NArg() == 0 {
		return errors.New("name the shards' results directories")
	}
	if (len(f.tolerances) > 0 || f.failMissing) && f.baselinePath == "" {
		return errors.New("--tolerance and --fail-missing need --baseline")
	}
	if err := f.files.Check(); err != nil {
		return err
	}
	if err := report.CheckOut(f.out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// mergedInvocation is the invocation the shards were parts of: the plan as they loaded it
// (for the compare checks of files split across shards and the scenario files' baseline
// tolerances), checked to be the plan they ran, and the baseline comparer.
func mergedInvocation(f *runFlags, shards []shard.Dir, stderr io.Writer) (*shard.Merge, *invocation, error) {
	first := shards[0].Manifest
	// Nothing runs here: the shards ran (and were checked) with their own --allow-remote.
	plan, _, _ := loadPlan(first.Files, stderr, f.log, runner.CheckOptions{AllowRemote: true})
	if plan == nil {
		return nil, nil, errors.New("cannot load the scenario files the shards ran (run kalab merge where kalab run --shard ran)")
	}
	m, err := shard.Open(shards, plan)
	if err != nil {
		return nil, nil, err
	}
	inv := &invocation{opt: m.Options, plan: m.Plan, paths: first.Paths}
	if f.baselinePath == "" {
		return m, inv, nil
	}
	flagTols, err := gate.ParseToleranceFlags(f.tolerances)
	if err != nil {
		return nil, nil, fmt.Errorf("--tolerance %v", err)
	}
	base, err := baseline.Load(f.baselinePath)
	if err != nil {
		return nil, nil, err
	}
	if _, err := base.Complete(); err != nil && !f.allowPartial {
		return nil, nil, err
	}
	inv.cmp = &baseline.Comparer{Baseline: base, Tolerances: diff.PlanTolerances(m.Plan, flagTols)}
	m.Baseline = inv.cmp
	return m, inv, nil
}

// printMerged says what was merged, what is missing and where the results are.
func printMerged(stdout io.Writer, shards []shard.Dir, runs int, gaps []string, dir string) {
	fmt.Fprintf(stdout, "\nmerged %d shard%s of %d: %d run%s\n", len(shards), plural(len(shards)), shards[0].Manifest.Shards, runs, plural(runs))
	for _, g := range gaps {
		fmt.Fprintf(stdout, "%s\n", g)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(stdout, "results: %s\n", dir)
}
