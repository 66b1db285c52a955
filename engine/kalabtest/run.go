package kalabtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// job is one run of the plan.
type job struct {
	sc *scenario.Scenario
	r  *scenario.Run
}

// runEach runs each run as a subtest of t that opens the run's bubble itself, so the
// subtest's time is the run's and its verdict is the subtest's; compare checks are
// evaluated over the records once every run has ended.
func (o *options) runEach(t *testing.T, plan *scenario.Plan) Results {
	t.Helper()
	var jobs []job
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			if o.filter == nil || o.filter.MatchString(sc.Name+"/"+r.Variant) {
				jobs = append(jobs, job{sc, r})
			}
		}
	}
	if len(jobs) == 0 {
		t.Fatalf("kalabtest: %v", runner.ErrNoRuns)
	}
	recs := make([]*report.Run, len(jobs))
	sem := make(chan struct{}, o.parallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		one := func() {
			t.Run(j.r.Variant, func(st *testing.T) { recs[i] = o.runOne(st, j) })
		}
		if o.parallel == 1 {
			one()
			continue
		}
		sem <- struct{}{}
		wg.Go(func() { defer func() { <-sem }(); one() })
	}
	wg.Wait()
	var out Results
	for _, rec := range recs {
		if rec != nil {
			out = append(out, rec)
		}
	}
	for _, sc := range plan.Scenarios {
		o.compare(t, sc, out)
	}
	return out
}

// runOne runs one job on t, whose subtest holds the bubble, and reports its verdict to t.
func (o *options) runOne(t *testing.T, j job) *report.Run {
	t.Helper()
	sc := *j.sc
	sc.Runs, sc.Compare = []*scenario.Run{j.r}, nil // compare is evaluated over every run, after
	rc := &runClient{o: o}
	out, err := runner.Execute(t.Context(), &scenario.Plan{Scenarios: []*scenario.Scenario{&sc}}, runner.Options{
		Out: t.TempDir(), KalabVersion: "kalabtest", Log: zerolog.Nop(), Parallel: 1,
		SkipRequests: true, NewClient: rc.newClient, Host: runner.TestHost(t),
	})
	if err != nil {
		t.Fatalf("kalabtest: %v", err)
	}
	if len(out.Runs) != 1 {
		t.Fatalf("kalabtest: %s/%s: %d records, want 1", sc.Name, j.r.Variant, len(out.Runs))
	}
	rec := out.Runs[0]
	if rec.Status == report.StatusError && strings.Contains(rec.Error, runner.OutsideMarker) {
		rec.Error = o.clientName() + " waits on something outside the run: a connection of its own (a DialContext or DialTLSContext that does not use the dial kalab hands it, a proxy, a DNS lookup) or a goroutine started outside the run; " + rec.Error
	}
	o.verdict(t, rec)
	if o.transport != nil && rec.Clock == scenario.ClockVirtual && rc.dials.Load() == 0 && rec.Metrics.Requests > 0 {
		t.Errorf("%s/%s: your RoundTripper never dialed through the dial kalabtest.Transport hands it: it connects by other means (a DialContext or DialTLSContext of its own, a proxy), outside the run's in-memory network; set http.Transport.DialContext to dial", rec.Scenario, rec.Variant)
	}
	return rec
}

// clientName names the run's client in a message.
func (o *options) clientName() string {
	if o.transport != nil {
		return "kalabtest.Transport's RoundTripper"
	}
	return "kalabtest.Client's Transport"
}

// runAll runs the whole plan in one invocation (the real clock), then reports each run as a
// subtest of t, or to t itself when it is not a *testing.T.
func (o *options) runAll(t testing.TB, plan *scenario.Plan) Results {
	t.Helper()
	rc := &runClient{o: o}
	out, err := runner.Execute(context.Background(), plan, runner.Options{
		Out: t.TempDir(), KalabVersion: "kalabtest", Log: zerolog.Nop(), Parallel: o.parallel,
		Filter: o.filter, SkipRequests: true, NewClient: rc.newClient, CallerRealClock: true,
	})
	if err != nil {
		t.Fatalf("kalabtest: %v", err)
	}
	st, canRun := t.(*testing.T)
	for _, rec := range out.Runs {
		if canRun {
			st.Run(rec.Variant, func(t *testing.T) { o.verdict(t, rec) })
		} else {
			o.verdict(t, rec)
		}
	}
	for _, s := range out.Scenarios {
		for _, c := range s.Checks {
			if !c.Pass {
				t.Errorf("%s: %s (compare): %s (%s)%s", where(c), s.Scenario, c.Expr, report.Observed(c.Observed), suffix(checkWhy(c)))
			}
		}
	}
	return out.Runs
}

// compare evaluates sc's compare checks over the runs that ran and fails t for each that
// does not hold.
func (o *options) compare(t *testing.T, sc *scenario.Scenario, runs Results) {
	t.Helper()
	if len(sc.Compare) == 0 {
		return
	}
	byVariant := map[string]*report.Run{}
	for _, r := range runs {
		if r.Scenario == sc.Name {
			byVariant[r.Variant] = r
		}
	}
	srec := runner.CompareScenario(sc, byVariant, "kalabtest", "")
	for _, c := range srec.Checks {
		if !c.Pass {
			t.Errorf("%s: %s (compare): %s (%s)%s", where(c), sc.Name, c.Expr, report.Observed(c.Observed), suffix(checkWhy(c)))
		}
	}
}

// verdict fails t for every reason rec is not a pass: no verdict (or skips, with
// SkipNoVerdict), an engine error or interruption, and every check that did not hold or
// could not be evaluated.
func (o *options) verdict(t testing.TB, rec *report.Run) {
	t.Helper()
	name := rec.Scenario + "/" + rec.Variant
	if why := noVerdict(rec); why != "" {
		if o.skipNone {
			t.Skipf("%s: %s", name, why)
		}
		t.Fatalf("%s: no verdict: %s (kalab run would exit 3; kalabtest.SkipNoVerdict skips instead)", name, why)
	}
	reported := false
	if rec.Status == report.StatusError || rec.Status == report.StatusInterrupted {
		t.Errorf("%s: %s: %s", name, rec.Status, rec.Error)
		reported = true
	}
	for _, c := range rec.Checks {
		if !c.Pass {
			t.Errorf("%s: %s: %s (%s)%s", where(c), name, c.Expr, report.Observed(c.Observed), suffix(checkWhy(c)))
			reported = true
		}
	}
	if rec.Status != report.StatusPass && !reported {
		t.Errorf("%s: status %s%s", name, rec.Status, suffix(rec.Error))
	}
}

// where is a check's file:line:col, or its file (a scenario built in Go has no lines).
func where(c report.Check) string {
	if c.Line == 0 {
		return c.File
	}
	return fmt.Sprintf("%s:%d:%d", c.File, c.Line, c.Col)
}

// checkWhy is why a check failed beyond its values: its error, or why it was not evaluated.
func checkWhy(c report.Check) string {
	if c.Error != "" {
		return c.Error
	}
	return c.NotEvaluated
}

// noVerdict says why a run has no verdict: its timing was too noisy, or it did not run here;
// "" when it has one.
func noVerdict(rec *report.Run) string {
	switch {
	case rec.Timing != nil && rec.Timing.Noisy:
		return rec.Error
	case rec.Status == report.StatusNotRun:
		return "not run: " + rec.Reason
	}
	return ""
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
