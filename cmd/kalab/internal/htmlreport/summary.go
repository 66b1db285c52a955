package htmlreport

import (
	"strings"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/numtext"
	"github.com/kalab-dev/kalab/engine/report"
)

// totals are the counts at the top of the page.
type totals struct {
	Runs, Passed, Failed, NoVerdict, NotRun, Noisy int // runs by outcome (noisy runs are also NoVerdict)
	Checks, ChecksFailed, NotEvaluated             int // checks of every kind, compares included
	Requests, Errors                               float64
	Regressed                                      int // runs with a metric regressed from the baseline (kalab report --baseline)
}

// failure is one line of the failures panel: something that did not pass, with a link.
type failure struct {
	Kind   string // fail, error, interrupted, not-run, noisy, not-evaluated: also the badge's class
	Href   string // #id of the run or scenario section
	Title  string // scenario / variant
	Detail string
}

// summarize counts the runs and checks of the page and lists every run that did not pass
// and every check that failed or was not evaluated, in page order.
func summarize(scens []*scenarioView) (totals, []failure) {
	var t totals
	var out []failure
	for _, sv := range scens {
		for _, rv := range sv.Runs {
			t.Runs++
			t.Requests += rv.Metrics.Requests
			t.Errors += rv.Metrics.Errors
			if f, ok := runFailure(rv, &t); ok {
				out = append(out, f)
			}
			if f, ok := regression(rv, &t); ok {
				out = append(out, f)
			}
			for _, c := range rv.Checks {
				if f, ok := checkFailure(c, &t, "#"+rv.ID, rv.Title); ok {
					out = append(out, f)
				}
			}
		}
		for _, c := range sv.Compare {
			if f, ok := checkFailure(c, &t, "#"+sv.ID, sv.Name+" / compare"); ok {
				out = append(out, f)
			}
		}
	}
	return t, out
}

// runFailure counts a run's outcome and returns its line when it did not pass.
func runFailure(rv *runView, t *totals) (failure, bool) {
	f := failure{Kind: rv.Status, Href: "#" + rv.ID, Title: rv.Title}
	switch rv.Status {
	case report.StatusPass:
		t.Passed++
		return f, false
	case report.StatusFail:
		t.Failed++
		for _, c := range rv.Checks {
			if c.Failed() {
				return f, false // each failed check has its own line (checkFailure)
			}
		}
		f.Detail = "failed"
	case report.StatusNotRun:
		t.NotRun++
		f.Detail = rv.Reason
	default: // error, interrupted: the run has no verdict
		t.NoVerdict++
		f.Detail = rv.Error
		if rv.Timing != nil && rv.Timing.Noisy {
			t.Noisy++
			f.Kind = "noisy"
		}
	}
	return f, true
}

// checkFailure counts a check and returns its line when it failed or was not evaluated.
func checkFailure(c report.Check, t *totals, href, title string) (failure, bool) {
	t.Checks++
	f := failure{Kind: c.Verdict(), Href: href, Title: title}
	switch c.Verdict() {
	case report.VerdictFail:
		t.ChecksFailed++
		f.Detail = c.Kind + " " + c.Expr + observedText(c)
	case report.VerdictNotEvaluated:
		t.NotEvaluated++
		f.Detail = c.Kind + " " + c.Expr + ": not evaluated: " + c.NotEvaluated
	default:
		return f, false
	}
	return f, true
}

func observedText(c report.Check) string {
	if c.Error != "" {
		return " · " + c.Error
	}
	if len(c.Observed) == 0 {
		return ""
	}
	return " · observed " + observed(c.Observed)
}

// regression returns a run's line when a metric regressed from the baseline it was
// compared with by kalab report --baseline.
func regression(rv *runView, t *totals) (failure, bool) {
	if rv.Diff == nil {
		return failure{}, false
	}
	var parts []string
	for _, m := range rv.DiffRows {
		if m.Verdict == gate.VerdictRegressed {
			parts = append(parts, m.Metric+" "+fmtNum(m.Old)+" → "+fmtNum(m.New)+" ("+m.Change()+")")
		}
	}
	if len(parts) == 0 {
		return failure{}, false
	}
	t.Regressed++
	return failure{Kind: gate.VerdictRegressed, Href: "#" + rv.ID, Title: rv.Title, Detail: strings.Join(parts, "; ")}, true
}

// h3Counts is an HTTP/3 run's QUIC counts for its header: path migrations, PINGs and the
// datagrams a NAT dropped always, the others when not zero; "" for a run over TCP.
func h3Counts(m check.Metrics, h3 bool) string {
	if !h3 {
		return ""
	}
	var parts []string
	for _, c := range []struct {
		v      float64
		what   string
		always bool
	}{
		{m.PathMigrations, "path migrations", true},
		{m.PingsSent, "PINGs sent", true},
		{m.MiddleboxDroppedDatagrams, "datagrams dropped by the NAT", true},
		{m.MiddleboxExpired, "NAT flows expired", false},
		{m.MiddleboxRebinds, "NAT rebinds", false},
		{m.ClientIdleTimeouts, "client idle timeouts", false},
		{m.ZeroRTTAccepted, "0-RTT accepted", false},
		{m.ZeroRTTRejected, "0-RTT rejected", false},
		{m.DatagramsLost, "datagrams lost", false},
	} {
		if c.always || c.v != 0 {
			parts = append(parts, numtext.Format(c.v)+" "+c.what)
		}
	}
	return strings.Join(parts, " · ")
}
