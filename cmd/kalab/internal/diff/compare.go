package diff

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Problems are the errors of inputs that are each wrong on their own, one per line.
type Problems []error

func (p Problems) Error() string { return errors.Join(p...).Error() }

// Load loads OLD and NEW with the checks a baseline gets; each bad one is a Problem. OLD
// plays the baseline: a partial one would make every run it lacks look new and hide
// regressions, so it is refused unless allowPartial. NEW may be partial: the table shows
// what it has. warnings say what was taken anyway.
func Load(oldPath, newPath string, allowPartial bool) (old, cur *baseline.Baseline, warnings []string, err error) {
	old, oerr := baseline.Load(oldPath)
	cur, cerr := baseline.Load(newPath)
	var bad Problems
	for _, e := range []struct {
		role string
		err  error
	}{{"OLD", oerr}, {"NEW", cerr}} {
		var be *baseline.Error
		switch {
		case errors.As(e.err, &be):
			bad = append(bad, fmt.Errorf("%s %s: %v", e.role, be.Path, be.Err))
		case e.err != nil:
			bad = append(bad, fmt.Errorf("%s: %v", e.role, e.err))
		}
	}
	if len(bad) > 0 {
		return nil, nil, nil, bad
	}
	for _, e := range []struct {
		role    string
		b       *baseline.Baseline
		partial bool
	}{{"OLD", old, allowPartial}, {"NEW", cur, true}} {
		legacy, err := e.b.Complete()
		switch {
		case err != nil && !e.partial:
			return nil, nil, nil, Problems{fmt.Errorf("%s %v", e.role, err)}
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("%s %s did not complete: %s", e.role, e.b.Path, e.b.Invocation.Describe()))
		case legacy:
			warnings = append(warnings, fmt.Sprintf("%s %s has no invocation record (written by a kalab before invocation records): whether it completed is unknown", e.role, e.b.Path))
		}
	}
	return old, cur, warnings, nil
}

// Compare compares NEW's runs with OLD under tols: the runs in file order, grouped by
// scenario, then OLD's runs that NEW lacks. With scenarioFiles, the baseline: blocks of the
// scenario files NEW names apply as kalab run applies them, and runs follow their files'
// order; each file that does not load is a warning, and its runs get the defaults.
func Compare(old, cur *baseline.Baseline, tols *baseline.Tolerances, scenarioFiles bool) (diffs []gate.RunDiff, warnings []error) {
	runs := make([]*report.Run, len(cur.Runs))
	for i := range cur.Runs {
		runs[i] = &cur.Runs[i]
	}
	var order map[string]int
	if scenarioFiles {
		order, warnings = fileTolerances(runs, tols)
	}
	sortRuns(runs, order)
	cmp := &baseline.Comparer{Baseline: old, Tolerances: tols}
	return cmp.Diff(runs), warnings
}

// sortRuns puts the runs in file order, grouped by scenario: results files list runs as they
// ended, which splits a scenario's rows. Files sort by path; within a file, runs follow the
// scenario file (order, from the files that load) or else their order in the results.
func sortRuns(runs []*report.Run, order map[string]int) {
	first := map[string]int{}
	for i, r := range runs {
		if _, ok := first[r.Scenario]; !ok {
			first[r.Scenario] = i
		}
	}
	pos := func(r *report.Run) int {
		if i, ok := order[r.Scenario+"\x00"+r.Variant]; ok {
			return i
		}
		return len(order)
	}
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Scenario != b.Scenario {
			return first[a.Scenario] < first[b.Scenario]
		}
		return pos(a) < pos(b)
	})
}

// fileTolerances applies the baseline: blocks of the scenario files the runs name, as kalab
// run would have, and returns each planned run's place in its file (key scenario NUL
// variant). A file that is gone is skipped (results from another checkout: defaults apply);
// one that no longer loads is a warning.
func fileTolerances(runs []*report.Run, tols *baseline.Tolerances) (map[string]int, []error) {
	order := map[string]int{}
	files := map[string]bool{}
	for _, r := range runs {
		if r.File != "" {
			files[r.File] = true
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	var warnings []error
	for _, f := range names {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		plan, err := scenario.LoadFiles([]string{f})
		if err != nil {
			warnings = append(warnings, fmt.Errorf("%s does not load, so its baseline tolerances are not applied:\n%v", f, err))
			continue
		}
		for n, t := range PlanTolerances(plan, nil).Scenarios {
			tols.Scenarios[n] = t
		}
		for _, sc := range plan.Scenarios {
			for i, r := range sc.Runs {
				order[sc.Name+"\x00"+r.Variant] = i
			}
		}
	}
	return order, warnings
}

// Gate prints what an invocation's baseline found beyond the failed checks the summary
// lists (BaselineSummary) and returns the baseline's runs that did not run: those the
// invocation meant to run (keep: the files it selected, its filter, a shard's part) but
// did not record, unless it was interrupted, and those planned but not run here (a program
// they need is missing).
func Gate(w io.Writer, cmp *baseline.Comparer, runs []*report.Run, interrupted bool, keep func(*report.Run) bool, failMissing bool) ([]gate.RunDiff, error) {
	diffs := make([]gate.RunDiff, 0, len(runs))
	for _, r := range runs {
		diffs = append(diffs, cmp.CompareRun(r))
	}
	var missing []gate.RunDiff
	if !interrupted {
		missing = cmp.Baseline.Missing(runs, keep)
	}
	err := BaselineSummary(w, cmp.Baseline.Path, append(diffs, missing...), failMissing)
	for _, d := range diffs {
		if d.State == gate.StateMissing {
			missing = append(missing, d)
		}
	}
	return missing, err
}

// Selected returns the Missing filter for an invocation that loaded the scenarios named
// and was given paths (files or directories): a baseline run counts when its scenario was
// loaded, or when its file lies under one of the paths, so a file deleted from a selected
// directory is still missing while the files a subset left out are not.
func Selected(scenarios, paths []string) func(base *report.Run) bool {
	loaded := make(map[string]bool, len(scenarios))
	for _, s := range scenarios {
		loaded[s] = true
	}
	var roots []string
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			roots = append(roots, abs)
		}
	}
	return func(r *report.Run) bool {
		if loaded[r.Scenario] {
			return true
		}
		file, err := filepath.Abs(r.File)
		if err != nil {
			return false
		}
		for _, root := range roots {
			if rel, err := filepath.Rel(root, file); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
}
