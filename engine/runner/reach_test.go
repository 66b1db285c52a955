package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/judge"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/report"
)

// reachPlan: undici's preset in a seeded stale race on the virtual clock (a: the plan's
// one outcome), the same schedule under a pool that hands each request the connection
// just returned (fifo: other gaps, other outcomes), and a run on another seed.
const reachPlan = `
name: reach
network: {rtt: 50ms}
server: {tls: true, idle_timeout: 1s, keepalive_hint: false}
load: {requests: 20, burst: 4, pause: 700ms..1100ms, seed: 3}
variants:
  - {name: a, client: {preset: undici}}
  - {name: fifo, client: {preset: undici, scheduling: fifo}}
  - {name: other-seed, client: {preset: undici}, load: {seed: 4}}
compare:
  - "plan_reaches('a', 'a')"
  - "plan_reaches('a', 'fifo')"
  - "plan_reaches('fifo', 'fifo')"
  - "plan_reaches('a', 'other-seed')"
`

func TestPlanReachesJudgesRunsByTheirPlan(t *testing.T) {
	t.Parallel()
	out, err := Execute(context.Background(), plan(t, reachPlan), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		if r.Timing != nil && r.Timing.Slack != nil {
			t.Errorf("%s kept a slack: only a real-clock run a plan_reaches weighs keeps one", r.Variant)
		}
	}
	for i, want := range []struct {
		pass bool
		err  string
		why  string
	}{
		{pass: true},
		// fifo pools one connection (a pause past the close makes it reconnect), undici's
		// pool two from the first burst on, reconnecting each in place after such a pause.
		{pass: false, why: "fifo ended with errors 0, connections 2, no burst failing; at its slack the plan of a reaches errors 0, connections 4, no burst failing"},
		{pass: true},
		{err: "plan_reaches: a and other-seed do not pause alike"},
	} {
		c := out.Scenarios[0].Checks[i]
		if c.Pass != want.pass || c.Why != want.why || !strings.Contains(c.Error, want.err) || (want.err == "") != (c.Error == "") || c.NotEvaluated != "" {
			t.Errorf("%s: pass %t, error %q, why %q, not evaluated %q; want pass %t, error %q, why %q (observed %v)", c.Expr, c.Pass, c.Error, c.Why, c.NotEvaluated, want.pass, want.err, want.why, c.Observed)
		}
	}
}

// TestPlanReachesWeighsARealClockRun: the preset on loopback in real time keeps the slack
// of its requests (in scenario time; the margin is the clocks' precision), and its counts
// are among the outcomes the plan reaches at that slack.
func TestPlanReachesWeighsARealClockRun(t *testing.T) {
	t.Parallel()
	src := strings.Replace(reachPlan, "  - {name: fifo,", "  - {name: live, clock: real, client: {preset: undici}}\n  - {name: fifo,", 1)
	src = strings.Replace(src, "  - \"plan_reaches('a', 'fifo')\"", "  - \"plan_reaches('a', 'live')\"", 1)
	// Pauses 200 ms from the idle timeout, so that a busy machine's timers can still be
	// judged; a client's gap (its pause and the requests since its last response) can
	// still come near the race.
	src = strings.Replace(src, "pause: 700ms..1100ms", "pause: 500ms..800ms", 1)
	o := virtualOpts(t)
	o.Filter = regexp.MustCompile(`/(a|live)$`)
	out, err := Execute(context.Background(), plan(t, src), o)
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	for _, r := range out.Runs {
		if r.Variant != "live" {
			continue
		}
		if sl := r.Timing.Slack; sl == nil || len(sl.BeforeMs) != 20 || len(sl.DuringMs) != 20 || sl.MarginMs != 1 {
			t.Fatalf("the real-clock run's slack: %+v", r.Timing.Slack)
		}
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatalf("a record with a slack does not validate: %v", err)
	}
	c := out.Scenarios[0].Checks[1]
	if c.Expr != "plan_reaches('a', 'live')" || !c.Pass {
		t.Fatalf("%s: pass %t, error %q, not evaluated %q (observed %v)", c.Expr, c.Pass, c.Error, c.NotEvaluated, c.Observed)
	}
}

// TestPlanReachesTooManyWaysIsNoVerdict: a run whose slack left the walk too many ways to
// follow gives its compare no verdict, the machine's (through expr's own error wrapping).
func TestPlanReachesTooManyWaysIsNoVerdict(t *testing.T) {
	a, err := check.Compile("plan_reaches('a', 'b')", check.Compare)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(string) (check.Metrics, bool) { return check.Metrics{}, true }
	res := a.CheckCompare(lookup, func(string, string) (bool, error) {
		return false, fmt.Errorf("plan_reaches: a: %w", oracle.ErrTooManyWays)
	})
	if why := reachUnjudged(res.Err); !judge.Unjudged(why) || !strings.Contains(why, "too many ways") {
		t.Fatalf("reachUnjudged(%v) = %q", res.Err, why)
	}
	res = a.CheckCompare(lookup, func(string, string) (bool, error) {
		return false, fmt.Errorf("plan_reaches: a and b do not share a server")
	})
	if why := reachUnjudged(res.Err); why != "" {
		t.Fatalf("a scenario's error is the machine's: %q", why)
	}
}
