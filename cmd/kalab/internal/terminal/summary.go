package terminal

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kalab-dev/kalab/engine/numtext"
	"github.com/kalab-dev/kalab/engine/report"
)

// Summary renders the terminal table of runs, in the order given (the plan's), with a
// "compare" row after each scenario that has compare checks; then every failed check with
// the values it read; then one totals line. TOTAL s is the run's total_ms in scenario time,
// WALL s the real time the run took: they differ by the time scale.
func Summary(w io.Writer, runs []*report.Run, scenarios []*report.Scenario) error {
	byName := make(map[string]*report.Scenario, len(scenarios))
	for _, s := range scenarios {
		byName[s.Scenario] = s
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tCLOCK\tREQUESTS\tERRORS\tCONNS\tP50 ms\tP95 ms\tTOTAL s\tWALL s\tCHECKS\tSTATUS\t")
	shown := map[string]bool{}
	for i, r := range runs {
		m := r.Metrics
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.2f\t%.2f\t%s\t%s\t\n", r.Scenario, r.Variant, r.ClockName(),
			m.Requests, m.Errors, m.Connections, m.LatencyMs.P50, m.LatencyMs.P95,
			m.TotalMs/1000, r.WallMs/1000, checksCell(r.Checks), r.Status)
		last := i == len(runs)-1 || runs[i+1].Scenario != r.Scenario
		if sc := byName[r.Scenario]; last && sc != nil && len(sc.Checks) > 0 && !shown[r.Scenario] {
			shown[r.Scenario] = true
			fmt.Fprintf(tw, "%s\t(compare)\t\t\t\t\t\t\t\t\t%s\t%s\t\n", sc.Scenario, checksCell(sc.Checks), sc.Status)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	timingSummary(w, runs)
	replaySummary(w, runs)
	modelSummary(w, runs)
	versionSummary(w, runs)
	failed := failures(runs, scenarios)
	if len(failed) > 0 {
		fmt.Fprintln(w)
		for _, f := range failed {
			fmt.Fprintln(w, f)
		}
	}
	fmt.Fprintln(w)
	_, err := fmt.Fprintln(w, totalsLine(runs, scenarios))
	return err
}

// totalsLine is the summary's last line: how many runs ended in each status and how many
// checks of each kind passed out of those evaluated, with the ones not evaluated apart
// (never counted as passed), e.g. "4 runs: 3 pass, 1 fail, 0 error; expect checks 7/8,
// compare checks 12/12 (2 not evaluated)".
func totalsLine(runs []*report.Run, scenarios []*report.Scenario) string {
	status := map[string]int{}
	for _, r := range runs {
		status[r.Status]++
	}
	s := fmt.Sprintf("%d run%s: %d pass, %d fail, %d error", len(runs), plural(len(runs)),
		status[report.StatusPass], status[report.StatusFail], status[report.StatusError])
	// Any other status (interrupted, or one added later) is named when it occurs.
	others := make([]string, 0, len(status))
	for st := range status {
		if st != report.StatusPass && st != report.StatusFail && st != report.StatusError {
			others = append(others, st)
		}
	}
	sort.Strings(others)
	for _, st := range others {
		s += fmt.Sprintf(", %d %s", status[st], st)
	}
	var all []report.Check
	for _, r := range runs {
		all = append(all, r.Checks...)
	}
	for _, sc := range scenarios {
		all = append(all, sc.Checks...)
	}
	if n := disagreements(runs); n > 0 {
		s += fmt.Sprintf(", %d model disagreement%s", n, plural(n))
	}
	sep := "; "
	for _, kind := range []string{"expect", "compare", "baseline"} {
		passed, evaluated, notEvaluated := countChecks(all, kind)
		if evaluated+notEvaluated == 0 && kind != "expect" {
			continue
		}
		s += fmt.Sprintf("%s%s checks %d/%d", sep, kind, passed, evaluated)
		sep = ", "
		if notEvaluated > 0 {
			s += fmt.Sprintf(" (%d not evaluated)", notEvaluated)
		}
	}
	return s
}

// countChecks counts the checks of kind ("" for all) by verdict: passed and evaluated
// (passed or failed), and apart those not evaluated.
func countChecks(cs []report.Check, kind string) (passed, evaluated, notEvaluated int) {
	for _, c := range cs {
		if kind != "" && c.Kind != kind {
			continue
		}
		switch c.Verdict() {
		case report.VerdictPass:
			passed++
			evaluated++
		case report.VerdictFail:
			evaluated++
		default:
			notEvaluated++
		}
	}
	return passed, evaluated, notEvaluated
}

// checksCell is a row's CHECKS column: passed/evaluated, then the checks that were not
// evaluated apart, so "0/0 +2 not evaluated" never reads as a pass.
func checksCell(cs []report.Check) string {
	passed, evaluated, notEvaluated := countChecks(cs, "")
	s := fmt.Sprintf("%d/%d", passed, evaluated)
	if notEvaluated > 0 {
		s += fmt.Sprintf(" +%d not evaluated", notEvaluated)
	}
	return s
}

func describeCheck(where string, c report.Check) string {
	if c.Verdict() == report.VerdictNotEvaluated {
		return fmt.Sprintf("%s:%d:%d: %s: NOT EVALUATED %s: %s", c.File, c.Line, c.Col, where, c.Expr, briefWhy(c.NotEvaluated))
	}
	s := fmt.Sprintf("%s:%d:%d: %s: FAIL %s", c.File, c.Line, c.Col, where, c.Expr)
	if len(c.Observed) > 0 {
		s += " (" + report.Observed(c.Observed) + ")"
	}
	if c.Error != "" {
		s += ": " + c.Error
	} else if c.Why != "" {
		s += ": " + c.Why
	}
	return s
}

// briefWhy is why a check was not evaluated as the summary line says it: a reason over 160
// characters loses the figures in parentheses and is cut at 160; the record keeps it whole.
func briefWhy(why string) string {
	if len([]rune(why)) <= 160 {
		return why
	}
	if i := strings.Index(why, " ("); i > 0 {
		why = why[:i]
	}
	if r := []rune(why); len(r) > 160 {
		why = string(r[:159]) + "…"
	}
	return why
}

// timingSummary says how many runs were rerun because their timers ran late, and why.
func timingSummary(w io.Writer, runs []*report.Run) {
	var reran, noisy int
	var lines []string
	for _, r := range runs {
		if r.Timing == nil || len(r.Timing.Reruns) == 0 {
			continue
		}
		reran++
		outcome := "then held its timing"
		if r.Timing.Noisy {
			noisy++
			outcome = "still noisy: no verdict"
		}
		for _, why := range r.Timing.Reruns {
			lines = append(lines, fmt.Sprintf("  %s / %s: %s", r.Scenario, r.Variant, why))
		}
		lines = append(lines, fmt.Sprintf("  %s / %s: rerun, %s (%d attempt%s)", r.Scenario, r.Variant, outcome, r.Timing.Attempt, plural(r.Timing.Attempt)))
	}
	if reran == 0 {
		return
	}
	fmt.Fprintf(w, "\ntiming: %d of %d runs rerun because their timers fired later, or their computing waited longer for a core, than their checks tolerate; %d still noisy\n",
		reran, len(runs), noisy)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
func num(f float64) string { return numtext.Format(f) }
