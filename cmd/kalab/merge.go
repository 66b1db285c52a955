package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shard"
)

// shardDir is one shard's results as found on disk.
type shardDir struct {
	dir string
	man *shard.Manifest
	res *report.Results
}

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
	shards, err := findShards(f.fs.Args())
	if err != nil {
		return invalid(err)
	}
	if err := consistent(shards); err != nil {
		return invalid(err)
	}
	inv, err := mergedInvocation(f, shards, stderr)
	if err != nil {
		return invalid(err)
	}
	runs, gaps, err := collect(shards)
	if err != nil {
		return invalid(err)
	}
	outcome, err := writeMerged(f.out, inv.plan, inv, runs, gaps)
	if outcome == nil {
		fmt.Fprintf(stderr, "kalab merge: %v\n", err)
		return exitEngine
	}
	missing, rerr := reportRun(f, inv, outcome, stdout)
	if err == nil {
		err = rerr
	}
	printMerged(stdout, shards, len(runs), gaps, outcome.Dir)
	code := runExitCode(f, outcome, missing, err, stderr)
	if len(gaps) > 0 && !f.allowPartial && (code == exitOK || code == exitCheckFailed) {
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
	fs.StringVar(&f.junitPath, "junit", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.htmlPath, "html", "", "also write the HTML report (kalab report) of the merged results to this file")
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
	if err := checkOutputFiles(f.junitPath, f.htmlPath); err != nil {
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
func mergedInvocation(f *runFlags, shards []shardDir, stderr io.Writer) (*invocation, error) {
	first := shards[0].man
	inv := &invocation{opt: runner.Options{KalabVersion: first.KalabVersion}}
	if first.Filter != "" {
		re, err := regexp.Compile(first.Filter)
		if err != nil {
			return nil, fmt.Errorf("%s: filter: %v", shards[0].dir, err)
		}
		inv.opt.Filter = re
	}
	// Nothing runs here: the shards ran (and were checked) with their own --allow-remote.
	plan, _ := loadPlan(first.Files, stderr, f.log, runner.CheckOptions{AllowRemote: true})
	if plan == nil {
		return nil, errors.New("cannot load the scenario files the shards ran (run kalab merge where kalab run --shard ran)")
	}
	inv.opt.TimeScale, inv.opt.Seed = first.TimeScale, first.Seed
	inv.planHash = runner.PlanHash(plan, inv.opt) // before the filter, as each shard's invocation record has it
	plan = filterPlan(plan, inv.opt.Filter)
	if h := shard.PlanHash(plan, shard.Overrides{TimeScale: first.TimeScale, Seed: first.Seed}); h != first.PlanHash {
		return nil, fmt.Errorf("the scenario files here are not the ones the shards ran (plan hash %.12s, the shards' %.12s): merge in the same checkout", h, first.PlanHash)
	}
	inv.plan = plan
	inv.paths = first.Paths
	if f.baselinePath == "" {
		return inv, nil
	}
	flagTols, err := parseTolerances(f.tolerances)
	if err != nil {
		return nil, fmt.Errorf("--tolerance %v", err)
	}
	base, err := report.LoadBaseline(f.baselinePath)
	if err != nil {
		return nil, err
	}
	if _, err := base.Complete(); err != nil && !f.allowPartial {
		return nil, err
	}
	inv.cmp = &report.Comparer{Baseline: base, Tolerances: runner.PlanTolerances(plan, flagTols)}
	return inv, nil
}

// printMerged says what was merged, what is missing and where the results are.
func printMerged(stdout io.Writer, shards []shardDir, runs int, gaps []string, dir string) {
	fmt.Fprintf(stdout, "\nmerged %d shard%s of %d: %d run%s\n", len(shards), plural(len(shards)), shards[0].man.Shards, runs, plural(runs))
	for _, g := range gaps {
		fmt.Fprintf(stdout, "%s\n", g)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fmt.Fprintf(stdout, "results: %s\n", dir)
}

// findShards reads every shard directory under the arguments: a directory with shard.json,
// or any directory below one (symbolic links such as latest are not followed, so no shard is
// read twice through them).
func findShards(args []string) ([]shardDir, error) {
	var out []shardDir
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", arg)
		}
		found := 0
		root, err := filepath.EvalSymlinks(arg) // a shard's latest link may be named itself
		if err != nil {
			return nil, err
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if _, err := os.Stat(filepath.Join(p, shard.ManifestFile)); err != nil {
				return nil
			}
			m, err := shard.ReadManifest(p)
			if err != nil {
				return err
			}
			res, err := report.ReadFile(filepath.Join(p, "results.jsonl"))
			if err != nil {
				return err
			}
			out = append(out, shardDir{dir: p, man: m, res: res})
			found++
			return filepath.SkipDir
		})
		if err != nil {
			return nil, err
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no shard results in it (a shard's run directory holds %s, written by kalab run --shard)", arg, shard.ManifestFile)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].man.Shard < out[j].man.Shard })
	// The same invocation found twice (a copy made by an artifact upload that followed the
	// latest link, or a directory named twice) is one shard, not an overlap.
	seen := map[string]bool{}
	out = slices.DeleteFunc(out, func(s shardDir) bool {
		k := s.man.RunID + "\x00" + fmt.Sprint(s.man.Shard)
		dup := seen[k]
		seen[k] = true
		return dup
	})
	return out, nil
}

// consistent refuses shards of different kalab versions, scenario sets or splits, and the
// same shard twice.
func consistent(shards []shardDir) error {
	first := shards[0]
	seen := map[int]string{}
	for _, s := range shards {
		m := s.man
		switch {
		case m.KalabVersion != first.man.KalabVersion:
			return fmt.Errorf("%s ran kalab %s, %s ran kalab %s: merge results of one kalab version", first.dir, first.man.KalabVersion, s.dir, m.KalabVersion)
		case m.Shards != first.man.Shards:
			return fmt.Errorf("%s is shard %d/%d, %s is shard %d/%d: merge the shards of one split", first.dir, first.man.Shard, first.man.Shards, s.dir, m.Shard, m.Shards)
		case m.PlanHash != first.man.PlanHash || m.Filter != first.man.Filter:
			return fmt.Errorf("%s and %s ran different scenario sets (plan %.12s vs %.12s): merge the shards of one plan", first.dir, s.dir, first.man.PlanHash, m.PlanHash)
		case m.SplitKey() != first.man.SplitKey():
			return fmt.Errorf("%s and %s split the plan differently (different --shard-weights?): merge the shards of one split", first.dir, s.dir)
		}
		if other, dup := seen[m.Shard]; dup {
			return fmt.Errorf("shard %d/%d twice: %s and %s", m.Shard, m.Shards, other, s.dir)
		}
		seen[m.Shard] = s.dir
	}
	return nil
}

// mergedRun is a run record and the shard directory its request file is in.
type mergedRun struct {
	rec *report.Run
	dir string
}

// collect gathers the shards' run records, refusing a run recorded twice or by a shard the
// split did not give it to, and lists what is missing: whole shards, and runs a shard was
// given but did not record.
func collect(shards []shardDir) (map[string]mergedRun, []string, error) {
	first := shards[0].man
	owner := map[string]int{}
	for _, r := range first.Runs {
		owner[r.Scenario+"/"+r.Variant] = r.Shard
	}
	runs := map[string]mergedRun{}
	present := map[int]bool{}
	var gaps []string
	for _, s := range shards {
		present[s.man.Shard] = true
		for i := range s.res.Runs {
			r := &s.res.Runs[i]
			k := r.Scenario + "/" + r.Variant
			if prev, dup := runs[k]; dup {
				return nil, nil, fmt.Errorf("run %s / %s is in %s and in %s", r.Scenario, r.Variant, prev.dir, s.dir)
			}
			if owner[k] == 0 {
				return nil, nil, fmt.Errorf("%s: run %s / %s is not in the plan the shards split", s.dir, r.Scenario, r.Variant)
			}
			if owner[k] != s.man.Shard {
				return nil, nil, fmt.Errorf("%s: run %s / %s belongs to shard %d/%d, not %d", s.dir, r.Scenario, r.Variant, owner[k], first.Shards, s.man.Shard)
			}
			runs[k] = mergedRun{rec: r, dir: s.dir}
		}
		var lost []string
		for _, r := range s.man.Mine() {
			if m, ok := runs[r.Scenario+"/"+r.Variant]; !ok || m.rec.Status == report.StatusInterrupted {
				lost = append(lost, r.Scenario+"/"+r.Variant)
			}
		}
		if len(lost) > 0 {
			gaps = append(gaps, fmt.Sprintf("shard %d/%d (%s) is incomplete: %d of its runs not recorded or interrupted: %s", s.man.Shard, first.Shards, s.dir, len(lost), strings.Join(lost, ", ")))
		}
	}
	for i := 1; i <= first.Shards; i++ {
		if present[i] {
			continue
		}
		var names []string
		for _, r := range first.Of(i) {
			names = append(names, r.Scenario+"/"+r.Variant)
		}
		if len(names) == 0 {
			continue // a shard with nothing to run loses nothing
		}
		gaps = append(gaps, fmt.Sprintf("shard %d/%d is missing: %d run%s not recorded: %s", i, first.Shards, len(names), plural(len(names)), strings.Join(names, ", ")))
	}
	return runs, gaps, nil
}

// writeMerged writes the merged results directory: the run records in plan order (judged
// against the baseline when there is one), their request files, and each scenario's compare
// checks evaluated over the merged runs.
func writeMerged(out string, plan *scenario.Plan, inv *invocation, runs map[string]mergedRun, gaps []string) (*runner.Outcome, error) {
	runID := report.NewRunID(time.Now())
	w, err := report.Create(out, runID)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	started := time.Now().UTC()
	rec := &report.Invocation{KalabVersion: inv.opt.KalabVersion, RunID: runID, State: report.InvocationStarted,
		PlanHash: inv.planHash, Planned: plan.Runs(), StartedAt: started}
	if inv.opt.Filter != nil {
		rec.Filter = inv.opt.Filter.String()
	}
	if err := w.WriteInvocation(rec); err != nil {
		return nil, err
	}
	outcome := &runner.Outcome{Dir: w.Dir}
	var werr error
	keep := func(e error) {
		if e != nil && werr == nil {
			werr = e
		}
	}
	for _, sc := range plan.Scenarios {
		byVariant := map[string]*report.Run{}
		for _, r := range sc.Runs {
			m, ok := runs[sc.Name+"/"+r.Variant]
			if !ok {
				continue
			}
			rec := m.rec
			if inv.cmp != nil {
				stripBaseline(rec)
				inv.cmp.Apply(rec)
			}
			for _, f := range referencedFiles(rec) {
				keep(copyRunFile(m.dir, w.Dir, f))
			}
			keep(w.WriteRun(rec))
			outcome.Runs = append(outcome.Runs, rec)
			byVariant[r.Variant] = rec
		}
		if len(byVariant) == 0 {
			continue
		}
		srec := runner.CompareScenario(sc, byVariant, inv.opt.KalabVersion, runID)
		keep(w.WriteScenario(srec))
		outcome.Scenarios = append(outcome.Scenarios, srec)
	}
	// The closing record: complete when every run of the plan is here and none was
	// interrupted; then latest points at the merged run.
	end := time.Now().UTC()
	rec.State, rec.EndedAt = report.InvocationEnded, &end
	merged := make([]report.Run, len(outcome.Runs))
	for i, r := range outcome.Runs {
		merged[i] = *r
	}
	rec.Tally(merged)
	rec.Completed = werr == nil && len(gaps) == 0 && rec.Recorded == rec.Planned && rec.Interrupted == 0
	if len(gaps) > 0 {
		rec.Reason = fmt.Sprintf("merged from shards with %d gap%s: %s", len(gaps), plural(len(gaps)), strings.Join(gaps, "; "))
	}
	keep(w.Finish(rec))
	outcome.Invocation = rec
	return outcome, werr
}

// stripBaseline removes what an earlier --baseline added to a run, so that merge judges it
// once, against its own baseline.
func stripBaseline(rec *report.Run) {
	if rec.Baseline == nil {
		return
	}
	rec.Baseline = nil
	rec.Checks = slices.DeleteFunc(rec.Checks, func(c report.Check) bool { return c.Kind == "baseline" })
	if rec.Status == report.StatusFail && !slices.ContainsFunc(rec.Checks, func(c report.Check) bool { return !c.Pass }) {
		rec.Status = report.StatusPass
	}
}

// referencedFiles lists every file a run record points to, relative to its run directory:
// the request and connection files, a real client's standard error, a real server's
// configuration and logs. A merged record keeps these references, so merge copies them all.
func referencedFiles(rec *report.Run) []string {
	files := []string{rec.RequestsFile, rec.ConnectionsFile}
	if rec.Client != nil {
		files = append(files, rec.Client.Stderr)
	}
	if rec.Server != nil {
		files = append(files, rec.Server.Logs...)
	}
	return slices.DeleteFunc(files, func(f string) bool { return f == "" })
}

// copyRunFile copies one file a run record references into the merged directory (a hard
// link when both are on one file system).
func copyRunFile(from, to, rel string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("%s: file %q is outside the run directory", from, rel)
	}
	src, dst := filepath.Join(from, rel), filepath.Join(to, rel)
	if err := os.MkdirAll(filepath.Dir(dst), atomicfile.DirMode); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: file %s, referenced by a run record, is missing", from, rel)
		}
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, atomicfile.Mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(o, in)
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	return err
}
