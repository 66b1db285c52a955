package terminal

import (
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/engine/report"
)

// Brief is the summary of kalab run --quiet: every failed or unevaluated check and every
// run without a verdict, one line each, then the totals line; no table.
func Brief(w io.Writer, runs []*report.Run, scenarios []*report.Scenario) error {
	for _, f := range failures(runs, scenarios) {
		fmt.Fprintln(w, f)
	}
	_, err := fmt.Fprintln(w, totalsLine(runs, scenarios))
	return err
}

// failures lists, one line each, the checks that did not pass (with the values they read)
// and the runs that ended without a verdict: what the summary prints under its table.
func failures(runs []*report.Run, scenarios []*report.Scenario) []string {
	var failed []string
	for _, r := range runs {
		for _, c := range r.Checks {
			if c.Verdict() != report.VerdictPass {
				failed = append(failed, describeCheck(r.Scenario+" / "+r.Variant, c))
			}
		}
		if r.Status == report.StatusError || r.Status == report.StatusInterrupted {
			failed = append(failed, fmt.Sprintf("%s / %s: %s: %s", r.Scenario, r.Variant, r.Status, r.BriefError()))
		}
		if r.Status == report.StatusNotRun {
			failed = append(failed, fmt.Sprintf("%s / %s: NOT RUN: %s", r.Scenario, r.Variant, r.Reason))
		}
	}
	for _, s := range scenarios {
		for _, c := range s.Checks {
			if c.Verdict() != report.VerdictPass {
				failed = append(failed, describeCheck(s.Scenario+" (compare)", c))
			}
		}
	}
	return failed
}
