package shard

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
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Dir is one shard's results as found on disk.
type Dir struct {
	Path     string
	Manifest *Manifest
	Results  *report.Results
}

// Find reads every shard directory under the arguments: a directory with shard.json,
// or any directory below one (symbolic links such as latest are not followed, so no shard is
// read twice through them).
func Find(args []string) ([]Dir, error) {
	var out []Dir
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
			if _, err := os.Stat(filepath.Join(p, ManifestFile)); err != nil {
				return nil
			}
			m, err := ReadManifest(p)
			if err != nil {
				return err
			}
			res, err := report.ReadFile(filepath.Join(p, "results.jsonl"))
			if err != nil {
				return err
			}
			out = append(out, Dir{Path: p, Manifest: m, Results: res})
			found++
			return filepath.SkipDir
		})
		if err != nil {
			return nil, err
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no shard results in it (a shard's run directory holds %s, written by kalab run --shard)", arg, ManifestFile)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Manifest.Shard < out[j].Manifest.Shard })
	// The same invocation found twice (a copy made by an artifact upload that followed the
	// latest link, or a directory named twice) is one shard, not an overlap. Shards of
	// different splits are refused (consistent).
	seen := map[string]bool{}
	out = slices.DeleteFunc(out, func(s Dir) bool {
		k := s.Manifest.RunID + "\x00" + fmt.Sprint(s.Manifest.Shard)
		dup := seen[k]
		seen[k] = true
		return dup
	})
	return out, consistent(out)
}

// consistent refuses shards of different kalab versions, scenario sets or splits, and the
// same shard twice.
func consistent(shards []Dir) error {
	if len(shards) == 0 {
		return nil
	}
	first := shards[0]
	seen := map[int]string{}
	for _, s := range shards {
		m := s.Manifest
		switch {
		case m.KalabVersion != first.Manifest.KalabVersion:
			return fmt.Errorf("%s ran kalab %s, %s ran kalab %s: merge results of one kalab version", first.Path, first.Manifest.KalabVersion, s.Path, m.KalabVersion)
		case m.Shards != first.Manifest.Shards:
			return fmt.Errorf("%s is shard %d/%d, %s is shard %d/%d: merge the shards of one split", first.Path, first.Manifest.Shard, first.Manifest.Shards, s.Path, m.Shard, m.Shards)
		case m.PlanHash != first.Manifest.PlanHash || m.Filter != first.Manifest.Filter:
			return fmt.Errorf("%s and %s ran different scenario sets (plan %.12s vs %.12s): merge the shards of one plan", first.Path, s.Path, first.Manifest.PlanHash, m.PlanHash)
		case m.SplitKey() != first.Manifest.SplitKey():
			return fmt.Errorf("%s and %s split the plan differently (different --shard-weights?): merge the shards of one split", first.Path, s.Path)
		}
		if other, dup := seen[m.Shard]; dup {
			return fmt.Errorf("shard %d/%d twice: %s and %s", m.Shard, m.Shards, other, s.Path)
		}
		seen[m.Shard] = s.Path
	}
	return nil
}

// Merge is the invocation the shards of one split were parts of, put back together as one
// results directory: Open checks the plan, Collect gathers the runs, Write writes them.
type Merge struct {
	Shards []Dir
	// Plan is the plan as the shards ran it (filtered), loaded from their files.
	Plan *scenario.Plan
	// Options are the shards' own: KalabVersion, Filter, TimeScale and Seed.
	Options runner.Options
	// PlanHash is the whole plan's (before the filter), as each shard's invocation record has it.
	PlanHash string
	// Baseline, when set, judges each merged run once, against its own baseline.
	Baseline *baseline.Comparer
	// Gaps say what Collect found missing: whole shards, and runs a shard was given but did
	// not record.
	Gaps []string
	runs map[string]mergedRun
}

// Open checks that plan, loaded from the files the shards name (Manifest.Files), is the
// plan they ran, with the filter they ran under.
func Open(shards []Dir, plan *scenario.Plan) (*Merge, error) {
	first := shards[0].Manifest
	m := &Merge{Shards: shards, Options: runner.Options{KalabVersion: first.KalabVersion}}
	if first.Filter != "" {
		re, err := regexp.Compile(first.Filter)
		if err != nil {
			return nil, fmt.Errorf("%s: filter: %v", shards[0].Path, err)
		}
		m.Options.Filter = re
	}
	m.Options.TimeScale, m.Options.Seed = first.TimeScale, first.Seed
	m.PlanHash = runner.PlanHash(plan, m.Options) // before the filter, as each shard's invocation record has it
	plan = Filter(plan, m.Options.Filter)
	if h := PlanHash(plan, Overrides{TimeScale: first.TimeScale, Seed: first.Seed}); h != first.PlanHash {
		return nil, fmt.Errorf("the scenario files here are not the ones the shards ran (plan hash %.12s, the shards' %.12s): merge in the same checkout", h, first.PlanHash)
	}
	m.Plan = plan
	return m, nil
}

// Recorded is how many runs Collect found.
func (m *Merge) Recorded() int { return len(m.runs) }

// mergedRun is a run record and the shard directory its request file is in.
type mergedRun struct {
	rec *report.Run
	dir string
}

// Collect gathers the shards' run records, refusing a run recorded twice or by a shard the
// split did not give it to, and lists what is missing: whole shards, and runs a shard was
// given but did not record.
func (m *Merge) Collect() error {
	shards := m.Shards
	first := shards[0].Manifest
	owner := map[string]int{}
	for _, r := range first.Runs {
		owner[r.Scenario+"/"+r.Variant] = r.Shard
	}
	runs := map[string]mergedRun{}
	present := map[int]bool{}
	var gaps []string
	for _, s := range shards {
		present[s.Manifest.Shard] = true
		for i := range s.Results.Runs {
			r := &s.Results.Runs[i]
			k := r.Scenario + "/" + r.Variant
			if prev, dup := runs[k]; dup {
				return fmt.Errorf("run %s / %s is in %s and in %s", r.Scenario, r.Variant, prev.dir, s.Path)
			}
			if owner[k] == 0 {
				return fmt.Errorf("%s: run %s / %s is not in the plan the shards split", s.Path, r.Scenario, r.Variant)
			}
			if owner[k] != s.Manifest.Shard {
				return fmt.Errorf("%s: run %s / %s belongs to shard %d/%d, not %d", s.Path, r.Scenario, r.Variant, owner[k], first.Shards, s.Manifest.Shard)
			}
			runs[k] = mergedRun{rec: r, dir: s.Path}
		}
		var lost []string
		for _, r := range s.Manifest.Mine() {
			if got, ok := runs[r.Scenario+"/"+r.Variant]; !ok || got.rec.Status == report.StatusInterrupted {
				lost = append(lost, r.Scenario+"/"+r.Variant)
			}
		}
		if len(lost) > 0 {
			gaps = append(gaps, fmt.Sprintf("shard %d/%d (%s) is incomplete: %d of its runs not recorded or interrupted: %s", s.Manifest.Shard, first.Shards, s.Path, len(lost), strings.Join(lost, ", ")))
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
	m.runs, m.Gaps = runs, gaps
	return nil
}

// Write writes the merged results directory: the run records in plan order (judged
// against the baseline when there is one), their request files, and each scenario's compare
// checks evaluated over the merged runs.
func (m *Merge) Write(out string) (*runner.Outcome, error) {
	plan, runs, gaps := m.Plan, m.runs, m.Gaps
	runID := report.NewRunID(time.Now())
	w, err := report.Create(out, runID)
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Close() }() // on an early return; the end closes it and keeps how that went
	started := time.Now().UTC()
	rec := &report.Invocation{KalabVersion: m.Options.KalabVersion, RunID: runID, State: report.InvocationStarted,
		PlanHash: m.PlanHash, Planned: plan.Runs(), StartedAt: started}
	if m.Options.Filter != nil {
		rec.Filter = m.Options.Filter.String()
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
			got, ok := runs[sc.Name+"/"+r.Variant]
			if !ok {
				continue
			}
			rec := got.rec
			if m.Baseline != nil {
				stripBaseline(rec)
				m.Baseline.Apply(rec)
			}
			for _, f := range referencedFiles(rec) {
				keep(copyRunFile(got.dir, w.Dir, f))
			}
			keep(w.WriteRun(rec))
			outcome.Runs = append(outcome.Runs, rec)
			byVariant[r.Variant] = rec
		}
		if len(byVariant) == 0 {
			continue
		}
		srec := runner.CompareScenario(sc, byVariant, m.Options.KalabVersion, runID)
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
	keep(w.Close())
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
	defer func() { _ = in.Close() }() // read only: a failed close loses nothing
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
