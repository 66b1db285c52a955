package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/kalab-dev/kalab/engine/diff"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// cmdDiff compares two results files with the rules kalab run --baseline applies.
func cmdDiff(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("diff", "diff [flags] OLD NEW  (results.jsonl files or run directories)", stdout, stderr)
	all := fs.Bool("all", false, "show every metric, not only the key ones and those that moved")
	tolFlags := fs.StringArray("tolerance", nil, "METRIC=TOLERANCE, e.g. latency_ms.p50=5%, errors=3 or 'latency_ms.*=off' (repeatable; overrides scenario files)")
	failMissing := fs.Bool("fail-missing", false, "exit 1 when a run of OLD is not in NEW")
	noScenarios := fs.Bool("no-scenario-tolerances", false, "ignore the baseline: blocks of the scenario files NEW names")
	allowPartial := fs.Bool("allow-partial", false, "accept an OLD whose invocation did not complete (interrupted, killed, stopped by an error)")
	format := formatFlag(fs, "json: one document on stdout with every metric of every run and the counts")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if !format.valid(stderr, "diff") {
		return exitInvalid
	}
	if _, err := lo.logger(stderr); err != nil {
		fmt.Fprintf(stderr, "kalab diff: %v\n", err)
		return exitInvalid
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "kalab diff: want two results files, OLD and NEW (got %d arguments)\n", fs.NArg())
		return exitInvalid
	}
	flagTols, err := gate.ParseToleranceFlags(*tolFlags)
	if err != nil {
		fmt.Fprintf(stderr, "kalab diff: --tolerance %v\n", err)
		return exitInvalid
	}
	old, cur, ok := loadDiffInputs(fs.Arg(0), fs.Arg(1), *allowPartial, stderr)
	if !ok {
		return exitInvalid
	}
	runs := make([]*report.Run, len(cur.Runs))
	for i := range cur.Runs {
		runs[i] = &cur.Runs[i]
	}
	tols := &report.Tolerances{Flags: flagTols, Scenarios: map[string]report.ScenarioTolerances{}}
	var order map[string]int
	if !*noScenarios {
		order = scenarioTolerances(runs, tols, stderr)
	}
	sortRuns(runs, order)
	cmp := &report.Comparer{Baseline: old, Tolerances: tols}
	diffs := cmp.Diff(runs)
	write := func() error { return diff.DiffTable(stdout, diffs, *all) }
	if format.json() {
		write = func() error { return diff.DiffJSON(stdout, diffs) }
	}
	if err := write(); err != nil {
		fmt.Fprintf(stderr, "kalab diff: %v\n", err)
		return exitEngine
	}
	c := diff.Count(diffs)
	switch {
	case c.Regressed > 0:
		return exitCheckFailed
	case *failMissing && c.Missing > 0:
		return exitCheckFailed
	}
	return exitOK
}

// loadDiffInputs loads OLD and NEW with the checks a baseline gets, reporting each bad one
// on stderr. OLD plays the baseline: a partial one would make every run it lacks look new and
// hide regressions, so it is refused unless allowPartial. NEW may be partial: the table
// shows what it has.
func loadDiffInputs(oldPath, newPath string, allowPartial bool, stderr io.Writer) (old, cur *report.Baseline, ok bool) {
	old, oerr := report.LoadBaseline(oldPath)
	cur, cerr := report.LoadBaseline(newPath)
	for _, e := range []struct {
		role string
		err  error
	}{{"OLD", oerr}, {"NEW", cerr}} {
		var be *report.BaselineError
		switch {
		case errors.As(e.err, &be):
			fmt.Fprintf(stderr, "kalab diff: %s %s: %v\n", e.role, be.Path, be.Err)
		case e.err != nil:
			fmt.Fprintf(stderr, "kalab diff: %s: %v\n", e.role, e.err)
		}
	}
	if oerr != nil || cerr != nil {
		return nil, nil, false
	}
	for _, e := range []struct {
		role    string
		b       *report.Baseline
		partial bool
	}{{"OLD", old, allowPartial}, {"NEW", cur, true}} {
		legacy, err := e.b.Complete()
		switch {
		case err != nil && !e.partial:
			fmt.Fprintf(stderr, "kalab diff: %s %v\n", e.role, err)
			return nil, nil, false
		case err != nil:
			fmt.Fprintf(stderr, "kalab diff: warning: %s %s did not complete: %s\n", e.role, e.b.Path, e.b.Invocation.Describe())
		case legacy:
			fmt.Fprintf(stderr, "kalab diff: warning: %s %s has no invocation record (written by a kalab before invocation records): whether it completed is unknown\n", e.role, e.b.Path)
		}
	}
	return old, cur, true
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

// scenarioTolerances applies the baseline: blocks of the scenario files the runs name, as
// kalab run would have, and returns each planned run's place in its file (key scenario NUL
// variant). A file that is gone or no longer loads is reported and skipped: the comparison
// then uses the defaults for its runs.
func scenarioTolerances(runs []*report.Run, tols *report.Tolerances, stderr io.Writer) map[string]int {
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
	for _, f := range names {
		if _, err := os.Stat(f); err != nil {
			continue // results from another checkout: defaults apply
		}
		plan, err := scenario.LoadFiles([]string{f})
		if err != nil {
			fmt.Fprintf(stderr, "kalab diff: %s does not load, so its baseline tolerances are not applied:\n%v\n", f, err)
			continue
		}
		for n, t := range runner.PlanTolerances(plan, nil).Scenarios {
			tols.Scenarios[n] = t
		}
		for _, sc := range plan.Scenarios {
			for i, r := range sc.Runs {
				order[sc.Name+"\x00"+r.Variant] = i
			}
		}
	}
	return order
}
