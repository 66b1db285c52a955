package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
)

// Summary renders the terminal table of runs: one line per run, then failed checks.
func Summary(w io.Writer, runs []*Run, scenarios []*Scenario) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tREQUESTS\tERRORS\tCONNS\tP50 ms\tP95 ms\tTOTAL s\tCHECKS\tSTATUS\t")
	for _, r := range runs {
		passed := 0
		for _, c := range r.Checks {
			if c.Pass {
				passed++
			}
		}
		m := r.Metrics
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.2f\t%d/%d\t%s\t\n", r.Scenario, r.Variant,
			m.Requests, m.Errors, m.Connections, m.LatencyMs.P50, m.LatencyMs.P95,
			m.TotalMs/1000, passed, len(r.Checks), r.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	timingSummary(w, runs)
	var failed []string
	for _, r := range runs {
		for _, c := range r.Checks {
			if !c.Pass {
				failed = append(failed, describeCheck(r.Scenario+" / "+r.Variant, c))
			}
		}
		if r.Status == StatusError || r.Status == StatusInterrupted {
			failed = append(failed, fmt.Sprintf("%s / %s: %s: %s", r.Scenario, r.Variant, r.Status, r.Error))
		}
		if r.Status == StatusSkipped {
			failed = append(failed, fmt.Sprintf("%s / %s: skipped: %s", r.Scenario, r.Variant, r.Reason))
		}
	}
	for _, s := range scenarios {
		for _, c := range s.Checks {
			if !c.Pass {
				failed = append(failed, describeCheck(s.Scenario+" (compare)", c))
			}
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w)
		for _, f := range failed {
			fmt.Fprintln(w, f)
		}
	}
	return nil
}

func describeCheck(where string, c Check) string {
	s := fmt.Sprintf("%s:%d:%d: %s: FAIL %s", c.File, c.Line, c.Col, where, c.Expr)
	if len(c.Observed) > 0 {
		s += " (" + Observed(c.Observed) + ")"
	}
	if c.Error != "" {
		s += ": " + c.Error
	}
	return s
}

// Observed renders observed values as "name=value, ..." in key order.
func Observed(obs map[string]float64) string {
	keys := make([]string, 0, len(obs))
	for k := range obs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += k + "=" + num(obs[k])
	}
	return out
}

func num(f float64) string {
	switch {
	case f == float64(int64(f)) && f < 1e15 && f > -1e15:
		return strconv.FormatInt(int64(f), 10)
	case f >= 100 || f <= -100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 3, 64)
	}
}

// timingSummary says how many runs were rerun because their timers ran late, and why.
func timingSummary(w io.Writer, runs []*Run) {
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
		lines = append(lines, fmt.Sprintf("  %s / %s: rerun alone, %s", r.Scenario, r.Variant, outcome))
	}
	if reran == 0 {
		return
	}
	fmt.Fprintf(w, "\ntiming: %d of %d runs rerun alone because their timers fired later than their checks tolerate; %d still noisy\n",
		reran, len(runs), noisy)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
