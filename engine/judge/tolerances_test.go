package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

func TestTolerancesFromTheChecks(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	type lim = map[string]time.Duration // "source.stat" -> tolerance
	cases := []struct {
		name string
		src  string
		want lim
	}{
		{"no check timing can move: nothing judged", "name: a\nnetwork: {rtt: 150ms}\ntime_scale: 0.1\nload: {requests: 2}\nexpect: [requests == 2]\n",
			lim{}},
		{"a count without pauses: only a stall as long as the timeout", "name: a\nnetwork: {rtt: 150ms}\nload: {requests: 2}\nexpect: [connections == 1]\n",
			// the server's default 5 s idle close less one RTT, halved
			lim{"sched.max": ms(2425)}},
		{"p50 of plain HTTP: RTT/10 over 3 trips, on the link's p50", "name: a\nnetwork: {rtt: 150ms}\ntime_scale: 0.1\nload: {requests: 2}\n" +
			"expect: [latency_ms.p50 < 160]\n",
			lim{"link.p50": ms(0.5)}},
		{"p99 and max of TLS 1.3: 5 trips, on the link's p99 and max", "name: a\nnetwork: {rtt: 100ms}\nserver: {tls: true}\nload: {requests: 2}\n" +
			"expect: [latency_ms.p99 < 600, latency_ms.max < 700]\n",
			lim{"link.p99": ms(2), "link.max": ms(2)}},
		{"TLS 1.2: 7 trips; total_ms on the means", "name: a\nnetwork: {rtt: 140ms}\nserver: {tls: true, tls_version: \"1.2\"}\n" +
			"load: {requests: 20, burst: 10, pause: 500ms}\nexpect: [total_ms < 9000]\n",
			lim{"link.mean": ms(2), "schedule.mean": ms(50)}},
		{"compare check: only the variants it names", "name: a\nnetwork: {rtt: 100ms}\nload: {requests: 2}\n" +
			"variants:\n  - name: x\n  - name: y\ncompare: [\"variant('x').latency_ms.p50 < 2 * variant('x').latency_ms.min\"]\n",
			lim{"link.p50": ms(10.0 / 3), "link.max": ms(10.0 / 3)}}, // min is judged at the max
		{"count beside a pause range around the server's idle close", "name: a\nnetwork: {rtt: 150ms}\ntime_scale: 0.1\n" +
			"server: {idle_timeout: 2s}\nload: {requests: 20, burst: 10, pause: 1.5s..2.5s}\nexpect: [errors < 5]\n",
			// gap = 500 ms x0.1 = 50 ms: schedule and idle close /2, link /4
			// a stall: (2 s - 150 ms) x 0.1 / 2
			lim{"link.p99": ms(12.5), "schedule.p99": ms(25), "idle_close.p99": ms(25), "sched.max": ms(92.5)}},
		{"a server timeout past the client's own decides nothing", "name: a\nnetwork: {rtt: 150ms}\n" +
			"server: {idle_timeout: 60s}\nclient: {idle_timeout: 55s}\nload: {requests: 20, burst: 10, pause: 59.85s..60.15s}\nexpect: [errors == 0]\n",
			// gap = 59.85 s - 55 s = 4.85 s, not the 150 ms to the server's 60 s
			lim{"link.p99": ms(1212.5), "schedule.p99": ms(2425), "idle_close.p99": ms(2425), "sched.max": ms(27425)}},
		{"behind a balancer the client's timeouts do not shadow the server's", "name: a\nnetwork: {rtt: 20ms}\n" +
			"server: {idle_timeout: 6s}\nclient: {idle_timeout: 4s}\nbalancer: {preset: aws-alb, backend_network: {rtt: 400ms}}\n" +
			"load: {requests: 20, burst: 4, pause: 5.2s..6.4s}\nexpect: [errors == 0]\n",
			// gap = 6.4 s - 6 s = 400 ms (the server's close), not 1.2 s (the client's 4 s)
			// a stall: the client's 4 s is the shortest timeout, (4 s - 20 ms) / 2
			lim{"link.p99": ms(100), "schedule.p99": ms(200), "idle_close.p99": ms(200), "sched.max": ms(1990)}},
		{"counts and latency together: the tightest per statistic", "name: a\nnetwork: {rtt: 10ms}\n" +
			"server: {idle_timeout: 100ms}\nload: {requests: 10, burst: 1, pause: 80ms}\nexpect: [connections == 1, latency_ms.p99 < 12]\n",
			// latency: 10/10/3; count: gap 20 ms -> link 5, schedule and idle 10
			lim{"link.p99": ms(1.0 / 3), "schedule.p99": ms(10), "idle_close.p99": ms(10), "sched.max": ms(45)}},
		{"floor", "name: a\nnetwork: {rtt: 1ms}\ntime_scale: 0.1\nload: {requests: 2}\nexpect: [latency_ms.p50 < 1]\n",
			lim{"link.p50": tolFloor}},
		{"direct: no link to judge", "name: a\nload: {requests: 2}\nexpect: [latency_ms.p50 < 1]\n", lim{}},
	}
	for _, c := range cases {
		p := plan(t, c.src)
		sc := p.Scenarios[0]
		r := sc.Runs[0]
		st := r.Settings
		got := lim{}
		for _, l := range tolerances(Reads(sc, r, nil), st, shape.Scale(st.TimeScale), nil) {
			got[l.Src+"."+l.Stat] = l.D
			if l.By == "" {
				t.Errorf("%s: %s.%s says nothing of what set it", c.name, l.Src, l.Stat)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if d := got[k] - v; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("%s: %s = %v, want %v", c.name, k, got[k], v)
			}
		}
	}
	// A baseline's gated metrics count as checks, with the slack it allows as their margin.
	p := plan(t, "name: a\nnetwork: {rtt: 30ms}\ntime_scale: 0.5\nload: {requests: 8, concurrency: 2, burst: 4, pause: 1s}\n")
	sc := p.Scenarios[0]
	st := sc.Runs[0].Settings
	got := lim{}
	for _, l := range tolerances(Reads(sc, sc.Runs[0], map[string]float64{"latency_ms.p50": 6, "total_ms": 48, "requests": 0}), st, shape.Scale(st.TimeScale), nil) {
		got[l.Src+"."+l.Stat] = l.D
		if !strings.Contains(l.By, "gated by the baseline") {
			t.Errorf("baseline gates: %s.%s set by %q", l.Src, l.Stat, l.By)
		}
	}
	// p50: 6 ms x0.5 over 3 trips = 1 ms. total_ms: 48 ms x0.5 = 24 ms, half for the one
	// pause (12 ms), half over 4 requests in turn of 3 trips (1 ms).
	want := lim{"link.p50": ms(1), "link.mean": ms(1), "schedule.mean": ms(12)}
	if len(got) != len(want) || got["link.p50"] != want["link.p50"] || got["link.mean"] != want["link.mean"] || got["schedule.mean"] != want["schedule.mean"] {
		t.Errorf("baseline gates: %v, want %v", got, want)
	}
}

// TestStallJudgedAtTheMax: one goroutine that waited to run longer than the stall limit
// makes the run noisy, however few the samples; under the limit it does not.
func TestStallJudgedAtTheMax(t *testing.T) {
	t.Parallel()
	p := plan(t, "name: a\nnetwork: {rtt: 10ms}\nserver: {idle_timeout: 100ms}\nload: {requests: 10, burst: 1, pause: 80ms}\nexpect: [connections == 1]\n")
	sc, r := p.Scenarios[0], p.Scenarios[0].Runs[0]
	tol := tolerances(Reads(sc, r, nil), r.Settings, shape.Scale(1), nil) // sched.max: 45 ms
	for _, tc := range []struct {
		wait  time.Duration
		noisy bool
	}{{40 * time.Millisecond, false}, {50 * time.Millisecond, true}} {
		tm := &Timers{}
		for range 1000 {
			tm.Sched.Add(10 * time.Microsecond)
		}
		tm.Sched.Add(tc.wait)
		got := Assess(tm, tol)
		if got.Noisy != tc.noisy || (tc.noisy && !strings.Contains(got.Reason, "goroutines waited to run")) {
			t.Errorf("one wait of %v among 1,000 short ones: noisy %v (%s), want %v", tc.wait, got.Noisy, got.Reason, tc.noisy)
		}
	}
}

func plan(t *testing.T, src string) *scenario.Plan { return plantest.Load(t, src) }

// Behind a balancer, or a chain of them, every balancer's idle timeouts decide reuse on a
// link of their own: the pause range's gap is measured to the nearest of them too (here a
// balancer's 6 s, 200 ms past the longest pause), not only to the server's.
func TestChainTimeoutsDecide(t *testing.T) {
	p := plan(t, `
name: chain
server: {idle_timeout: 65s}
load: {requests: 8, burst: 2, pause: 5s..5.8s}
balancer:
  - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s}}
  - {idle_timeout: 6s, backend: {keepalive: true, idle_timeout: 60s}}
`)
	gap, why, ok := pauseGap(p.Scenarios[0].Runs[0].Settings)
	if !ok || gap != 200*time.Millisecond || !strings.Contains(why, "balancer[1].idle_timeout") {
		t.Errorf("the pause gap is %v (%s, %v), want 200ms to balancer[1].idle_timeout", gap, why, ok)
	}
	// One balancer, the client's hop closed at its 6 s: the same gap, to balancer.idle_timeout.
	one := plan(t, `
name: one
server: {idle_timeout: 65s}
load: {requests: 8, burst: 2, pause: 5s..5.8s}
balancer: {idle_timeout: 6s, backend: {keepalive: true, idle_timeout: 60s}}
`)
	gap, why, ok = pauseGap(one.Scenarios[0].Runs[0].Settings)
	if !ok || gap != 200*time.Millisecond || !strings.Contains(why, "balancer.idle_timeout") {
		t.Errorf("behind one balancer the pause gap is %v (%s, %v), want 200ms to balancer.idle_timeout", gap, why, ok)
	}
}
