package runner

import (
	"fmt"
	"github.com/kalab-dev/kalab/engine/predict"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// raceMargin is how far from an edge of the race window a pause must fall, in scenario
// time, for its outcome to be certain: at the stale-race file's time scale of 0.1 it is
// 1.5 ms of real time, the lateness a run may show before it counts as noisy (RTT/10 of its
// 15 ms real RTT). 10 ms of scenario time proved too tight: a CI rehearsal read 7 races at
// 1,900 ms where 4-6 were predicted.
const raceMargin = 15 * time.Millisecond

// predictRaces asks the oracle for the count of a stale-race run: lo counts the pauses at
// least raceMargin inside the race window (idle − RTT, idle), or (idle − RTT, client idle)
// under a shorter client idle timeout, hi adds those within raceMargin of it (the oracle's
// bounds at a lateness of raceMargin). metric is errors, or retries when the client retries.
func predictRaces(st scenario.Settings, metric string) (lo, hi int) {
	c, ok := oracle.Predict(predict.Plan(st), raceMargin).Count(metric)
	if !ok || !c.Predicted {
		return -1, -1
	}
	return c.Lo, c.Hi
}

// The stale-race file's error bands are the predictions of its seeded pauses, not bands
// wide enough to pass anyway: each variant's check must read exactly the counted range.
func TestStaleRaceBandsFollowFromThePauses(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "04-stale-race.yaml")
	p, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // variant -> the check it must carry
	for _, r := range p.Scenarios[0].Runs {
		lo, hi := predictRaces(r.Settings, oracle.Errors)
		switch r.Variant {
		case "node-agent", "undici", "idle-1900":
			want[r.Variant] = fmt.Sprintf("errors >= %d && errors <= %d", lo, hi)
		case "one-retry":
			lo, hi = predictRaces(r.Settings, oracle.Retries)
			want[r.Variant] = fmt.Sprintf("retries >= %d && retries <= %d", lo, hi)
		case "idle-1500":
			if hi != 0 {
				t.Errorf("idle-1500: %d pauses race; the variant's 0 errors is no longer a prediction", hi)
			}
			continue
		default:
			continue
		}
		var have []string
		for _, a := range r.Expect {
			have = append(have, a.Source)
		}
		if !slices.Contains(have, want[r.Variant]) {
			t.Errorf("%s: the pauses predict %q; the file checks %q", r.Variant, want[r.Variant], have)
		}
	}
	if len(want) != 4 {
		t.Errorf("checked %d variants (%v); the file's variants changed", len(want), want)
	}
}

// predictPoolDials asks the oracle for the connections a closed-model run in batches
// opens: the first batch dials one per request in flight; each later batch finds the
// connections the pool kept and dials the rest. Lateness can only lower the count (the
// oracle marks it an upper bound), so the band is the prediction less the counting noise,
// round(sqrt(n)).
func predictPoolDials(st scenario.Settings) (lo, hi int) {
	c, ok := oracle.Predict(predict.Plan(st), 0).Count(oracle.Connections)
	if !ok || !c.Predicted || !c.AtMost {
		return -1, -1
	}
	n := c.Value
	return n - int(math.Round(math.Sqrt(float64(n)))), n
}

// The pool-thrash file's connection bands are what its batches predict: each kept-alive
// variant must check exactly the computed band, so a change to the plan (requests, batch,
// pool size, pause) that moves the count makes this test fail until the band follows.
func TestPoolThrashCountFollowsFromTheBatches(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "08-pool-thrash.yaml")
	p, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	for _, r := range p.Scenarios[0].Runs {
		if !r.Settings.Client.KeepAlive {
			continue
		}
		lo, hi := predictPoolDials(r.Settings)
		checked[r.Variant] = hi
		want := fmt.Sprintf("connections >= %d && connections <= %d", lo, hi)
		var have []string
		for _, a := range r.Expect {
			have = append(have, a.Source)
		}
		if !slices.Contains(have, want) {
			t.Errorf("%s: the batches predict %q; the file checks %q", r.Variant, want, have)
		}
	}
	// The prediction itself, worked by hand from the file: 50 batches of 10, a pool of 2
	// keeps 2 and dials 8 per batch; a pool of 10 keeps all 10.
	if checked["idle-2"] != 402 || checked["idle-10"] != 10 || len(checked) != 2 {
		t.Errorf("predicted %v; want idle-2 402 and idle-10 10", checked)
	}
}

// The oracle's counts for the sequential and batch files satisfy each file's own checks:
// every expect assertion that reads only predicted counts (and requests) holds when the
// oracle's values stand in for the measured ones. A rule of the oracle that drifts from a
// file's finding fails here, before any run.
func TestOraclePassesTheFilesChecks(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	for _, name := range []string{"04-stale-race.yaml", "05-hint-gives-up-reuse.yaml", "08-pool-thrash.yaml", "10-lb-idle-mismatch.yaml", "12-alb-backend-race.yaml"} {
		p, err := scenario.LoadFiles([]string{filepath.Join(filepath.Dir(self), "..", "..", "scenarios", name)})
		if err != nil {
			t.Fatal(err)
		}
		evaluated := 0
		for _, r := range p.Scenarios[0].Runs {
			pred := oracle.Predict(predict.Plan(r.Settings), 0)
			flat := map[string]float64{"requests": float64(r.Settings.Load.Requests)}
			for _, c := range pred.Counts {
				if c.Predicted {
					flat[c.Metric] = float64(c.Value)
				}
			}
			for _, a := range r.Expect {
				if !readsOnly(a.Refs(), flat) {
					continue
				}
				evaluated++
				if ok, err := a.Eval(check.FromFlat(flat)); !ok || err != nil {
					t.Errorf("%s/%s: the oracle's counts %v fail %q (%v)", name, r.Variant, flat, a.Source, err)
				}
			}
		}
		if evaluated == 0 {
			t.Errorf("%s: no check reads only predicted counts", name)
		}
	}
}

func readsOnly(refs []check.Ref, have map[string]float64) bool {
	for _, r := range refs {
		if _, ok := have[r.Metric]; !ok {
			return false
		}
	}
	return len(refs) > 0
}

// A run's prediction is judged within the lateness its own timers showed: at 1.5 ms of
// real link lateness (15 ms of scenario time at the file's 0.1) the stale-race bounds are
// the file's band; a count outside them is a model disagreement, one inside is not, and
// with no lateness only the plan's own count agrees.
func TestPredictedRecordJudgesWithinTheRunsLateness(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	p, err := scenario.LoadFiles([]string{filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "04-stale-race.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Scenarios[0].Runs[0].Settings // node-agent
	lo, hi := predictRaces(st, oracle.Errors)
	quiet := &report.Timing{Sources: map[string]report.TimingSource{}}
	late := &report.Timing{Sources: map[string]report.TimingSource{judge.SrcLink: {P99: 1.5, Max: 9}}}
	for _, c := range []struct {
		tm       *report.Timing
		errors   float64
		disagree bool
	}{
		{quiet, 15, false}, {quiet, 16, true}, {late, float64(lo), false}, {late, float64(hi), false},
		{late, float64(hi + 1), true}, {late, float64(lo - 1), true},
	} {
		pr := predict.Record(predict.Plan(st), st.TimeScale, c.tm, check.Metrics{Errors: c.errors, Connections: 57, ReusedRequests: 943})
		if pr.Disagreement != c.disagree {
			t.Errorf("errors %v at lateness %v ms: disagreement %v (%s), want %v", c.errors, pr.LatenessMs, pr.Disagreement, pr.Reason, c.disagree)
		}
		if c.disagree && !strings.Contains(pr.Reason, fmt.Sprintf("errors measured %v", c.errors)) {
			t.Errorf("the reason %q does not name the count that disagrees", pr.Reason)
		}
	}
	if lo != 12 || hi != 21 {
		t.Errorf("the band at 15 ms is %d..%d; the file checks 12..21", lo, hi)
	}
}

// The FIN-timing file's checks are the predictions of its seeded pauses (predictRaces for
// the errors; one new connection after each pause past idle - RTT, whether the request
// after it failed or found the FIN), and they tell a FIN forwarded at once from one that
// keeps its one-way delay: that link would move the window's end from idle to idle - RTT/2,
// and the failures it leaves must be fewer than the file checks, by more than a pause near
// the new edge could blur.
func TestFINTimingFollowsFromThePauses(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	file := filepath.Join(filepath.Dir(self), "..", "..", "scenarios", "16-fin-timing.yaml")
	p, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Scenarios[0].Runs[0]
	st := r.Settings
	if st.Server.TLS {
		t.Fatal("the file must be plain HTTP: over TLS the close_notify tells the client of the close whatever the FIN does")
	}
	lo, hi := predictRaces(st, oracle.Errors)
	if lo != hi {
		t.Fatalf("the pauses predict %d..%d failures: pick a seed whose pauses keep clear of the window's edges", lo, hi)
	}
	idle, rtt := time.Duration(st.Server.IdleTimeout), time.Duration(st.Network.RTT)
	undelayed, past := 0, 0
	for _, real := range load.Pauses(configure.Load(st, shape.Scale(st.TimeScale))) {
		p := time.Duration(float64(real) / st.TimeScale)
		if p > idle-rtt-raceMargin && p < idle-rtt/2+raceMargin {
			undelayed++
		}
		if p > idle-rtt {
			past++
		}
	}
	want := []string{fmt.Sprintf("errors == %d", lo), fmt.Sprintf("connections == %d", 1+past)}
	var have []string
	for _, a := range r.Expect {
		have = append(have, a.Source)
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Errorf("the pauses predict %q; the file checks %q", w, have)
		}
	}
	if lo-undelayed < 2 {
		t.Errorf("with the FIN undelayed up to %d of the %d failures remain: the file cannot tell the FIN's timing", undelayed, lo)
	}
}
