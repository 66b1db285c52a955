package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/diff"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// cmdDiff compares two results files with the rules kalab run --baseline applies.
func cmdDiff(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("diff", "diff [flags] OLD NEW  (results.jsonl files or run directories)", stdout, stderr)
	all := fs.Bool("all", false, "show every metric, not only the key ones and those that moved")
	tolFlags := fs.StringArray("tolerance", nil, "METRIC=TOLERANCE, e.g. latency_ms.p50=5%, errors=3 or 'latency_ms.*=off' (repeatable; overrides scenario files)")
	failMissing := fs.Bool("fail-missing", false, "exit 1 when a run of OLD is not in NEW")
	noScenarios := fs.Bool("no-scenario-tolerances", false, "ignore the baseline: blocks of the scenario files NEW names")
	twoSided := fs.Bool("two-sided", false, "exit 1 also when a metric moved past its tolerance the better way: for two runs that must agree (a run on each clock), not for a baseline")
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
	old, cur, warnings, err := diff.Load(fs.Arg(0), fs.Arg(1), *allowPartial)
	var problems diff.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Fprintf(stderr, "kalab diff: %v\n", p)
		}
		return exitInvalid
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "kalab diff: warning: %s\n", w)
	}
	tols := &baseline.Tolerances{Flags: flagTols, Scenarios: map[string]baseline.ScenarioTolerances{}}
	diffs, fileWarnings := diff.Compare(old, cur, tols, !*noScenarios)
	for _, w := range fileWarnings {
		fmt.Fprintf(stderr, "kalab diff: %v\n", w)
	}
	write := func() error { return diff.DiffTable(stdout, diffs, *all) }
	if format.json() {
		write = func() error { return diff.DiffJSON(stdout, diffs) }
	}
	if err := write(); err != nil {
		fmt.Fprintf(stderr, "kalab diff: %v\n", err)
		return exitEngine
	}
	c := diff.Count(diffs)
	if c.Regressed > 0 || (*twoSided && c.Improved > 0) || (*failMissing && c.Missing > 0) {
		return exitCheckFailed
	}
	return exitOK
}
