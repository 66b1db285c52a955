package runner

import (
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/engine/predict"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/judge"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// A compare's plan_reaches('model', 'real') asks engine/oracle's Reach for the outcomes
// the model variant's plan and client rules reach when each idle gap may stretch by the
// slack the real variant measured around its requests, and checks that the real run's
// errors, connections and failed bursts are one of them. The real run keeps its slack
// (keepSlack) for that; a virtual run has none, so plan_reaches('model', 'model') is the
// plan's one nominal outcome.

// reached reports whether a compare of sc weighs variant's counts through plan_reaches.
func reached(sc *scenario.Scenario, variant string) bool {
	for _, a := range sc.Compare {
		if slices.Contains(a.Reached, variant) {
			return true
		}
	}
	return false
}

// keepSlack records a real-clock run's slack when a compare's plan_reaches weighs it. Its
// margin is the clocks' precision when the edge rule judged each request against the
// lateness around it (--lag-tolerance not below 0), else the timers' p99 lateness.
func keepSlack(rec *report.Run, c *compile.Run, tm *judge.Timers, opt Options) {
	if rec.Timing == nil || c.Virtual() || !reached(c.Scenario, rec.Variant) {
		return
	}
	st, scale := c.Settings, c.Scale()
	p := judge.SlackPlan{Burst: st.Load.Burst, Pauses: c.Pauses,
		RTT: scale.D(st.Network.RTT), Delay: scale.D(st.Server.Response.Delay), Handshakes: 1, Scale: st.TimeScale}
	if st.Server.TLS {
		p.Handshakes++
	}
	margin := judge.ClockPrecision
	if opt.LagTolerance < 0 {
		margin = predict.Lateness(rec.Timing, 1)
	}
	rec.Timing.Slack = judge.SlackOf(tm.Spans.All(), p, margin)
}

// reacher answers plan_reaches for the compare checks of sc over runs; why gets, for each
// call that is false, the run's counts beside the outcomes the plan reaches.
func reacher(sc *scenario.Scenario, runs map[string]*report.Run, why func(string)) check.Reacher {
	return func(rules, run string) (bool, error) {
		rr, mr := runs[rules], runs[run]
		rs, ms := runSettings(sc, rules), runSettings(sc, run)
		if rr == nil || mr == nil || rs == nil || ms == nil {
			return false, fmt.Errorf("plan_reaches: no run named %q or %q here", rules, run)
		}
		p, q := planOf(*rs, rr), planOf(*ms, mr)
		if why := samePlan(p, q); why != "" {
			return false, fmt.Errorf("plan_reaches: %s and %s %s", rules, run, why)
		}
		var s oracle.Slack
		if mr.Clock != scenario.ClockVirtual {
			if mr.Timing == nil || mr.Timing.Slack == nil {
				return false, fmt.Errorf("plan_reaches: %s kept no slack of its requests (it did not complete one request at a time)", run)
			}
			sl := mr.Timing.Slack
			s = oracle.Slack{Before: judge.Durations(sl.BeforeMs), During: judge.Durations(sl.DuringMs), Margin: time.Duration(sl.MarginMs * float64(time.Millisecond))}
		}
		outs, err := oracle.Reach(p, s)
		if err != nil {
			return false, fmt.Errorf("plan_reaches: %s: %w", rules, err)
		}
		got := oracle.Outcome{Errors: int(mr.Metrics.Errors), Connections: int(mr.Metrics.Connections), FailedBursts: uint64(mr.Metrics.FailedBurstsMask)}
		if slices.Contains(outs, got) {
			return true, nil
		}
		alts := make([]string, len(outs))
		for i, o := range outs {
			alts[i] = outcomeText(o)
		}
		why(fmt.Sprintf("%s ended with %s; at its slack the plan of %s reaches %s", run, outcomeText(got), rules, strings.Join(alts, ", or ")))
		return false, nil
	}
}

// reachUnjudged is why a compare whose plan_reaches could not weigh its run (the run's
// slack left the walk too many ways: the machine, not the program) has no verdict; "" for
// any other error or none.
func reachUnjudged(err error) string {
	if !errors.Is(err, oracle.ErrTooManyWays) {
		return ""
	}
	return judge.TimingUnjudged + " and the program's own time around its requests left plan_reaches too many ways to follow (" +
		err.Error() + "): run it with fewer runs at once (--parallel 1), or on a less busy machine"
}

// joinWhy is a failed check's why from its plan_reaches calls'.
func joinWhy(why []string) string { return strings.Join(why, "; ") }

// outcomeText is an outcome as the check's why says it.
func outcomeText(o oracle.Outcome) string {
	var bursts []string
	for b := range 64 {
		if o.FailedBursts&(1<<b) != 0 {
			bursts = append(bursts, fmt.Sprint(b))
		}
	}
	failed := "no burst failing"
	if len(bursts) > 0 {
		failed = "failing bursts " + strings.Join(bursts, " ")
	}
	return fmt.Sprintf("errors %d, connections %d, %s", o.Errors, o.Connections, failed)
}

// runSettings is the settings the file gives variant, or nil.
func runSettings(sc *scenario.Scenario, variant string) *scenario.Settings {
	for _, r := range sc.Runs {
		if r.Variant == variant {
			return &r.Settings
		}
	}
	return nil
}

// planOf is the oracle's plan of a run as it ran: its seed and time scale.
func planOf(st scenario.Settings, rec *report.Run) oracle.Plan {
	st.Load.Seed, st.TimeScale = rec.Seed, rec.TimeScale
	p := predict.Plan(st)
	p.Client.Real = "" // the rules are the first run's; the second lends its counts only
	return p
}

// samePlan says how two runs' schedules and server differ, or "".
func samePlan(p, q oracle.Plan) string {
	switch {
	case p.Requests != q.Requests || p.Burst != q.Burst || p.Concurrency != q.Concurrency:
		return "do not send the same requests (load.requests, burst, concurrency)"
	case p.RTT != q.RTT || p.Jitter != q.Jitter:
		return "do not share a network"
	case p.Server != q.Server:
		return "do not share a server"
	}
	for i := range p.Pauses {
		if i >= len(q.Pauses) || math.Abs(float64(p.Pauses[i]-q.Pauses[i])) > float64(time.Millisecond) {
			return "do not pause alike (load.pause and load.seed)"
		}
	}
	return ""
}
