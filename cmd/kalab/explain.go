package main

import (
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/engine/explain"
)

// cmdExplain prints why each notable request of a run went the way it did, from the run's
// own records (engine/explain builds the text).
func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs, _ := flagSet("explain", "explain [RESULTS_DIR] [--run SCENARIO/VARIANT] [--request N]  (default: results/latest)", stdout, stderr)
	name := fs.String("run", "", "the run to explain: SCENARIO/VARIANT, a variant, or a scenario with one run (needed when the results hold several)")
	seq := fs.Int("request", -1, "explain only this request (its seq in the request file)")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "kalab explain: want one results directory (got %d arguments)\n", fs.NArg())
		return exitInvalid
	}
	run, err := explain.Load(resultsDir(fs.Args()), *name)
	if err != nil {
		fmt.Fprintf(stderr, "kalab explain: %v\n", err)
		return exitInvalid
	}
	fmt.Fprintf(stdout, "%s / %s (%s)\n\n", run.Record.Scenario, run.Record.Variant, run.Record.Status)
	if *seq >= 0 {
		text, ok := explain.Request(run, *seq)
		if !ok {
			fmt.Fprintf(stderr, "kalab explain: run %s / %s has no request %d\n", run.Record.Scenario, run.Record.Variant, *seq)
			return exitInvalid
		}
		fmt.Fprintln(stdout, text)
		return exitOK
	}
	fmt.Fprintln(stdout, explain.All(run))
	return exitOK
}
