package judge

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// outcome is a check's verdict as the gate gives it: "pass", "fail", or "no verdict" when
// the judge says the machine could have changed it.
func outcome(pass bool, why string) string {
	switch {
	case why != "":
		return "no verdict"
	case pass:
		return "pass"
	}
	return "fail"
}

// realRun is a real-clock run with flat metrics, whose kalab threads waited queue real ms
// for a core per slice, the share nbrs of it (and nbrsTotal ms in all) behind other
// processes, and whose real server program's threads waited server ms behind them (<0: not
// measured).
func realRun(flat map[string]float64, queue, nbrs, nbrsTotal, server float64) *report.Run {
	r := &report.Run{Status: report.StatusPass, TimeScale: 1, Clock: scenario.ClockReal, Metrics: check.FromFlat(flat)}
	all := nbrsTotal / nbrs
	if nbrs == 0 {
		all = 1
	}
	r.Timing = &report.Timing{CPUWaitMs: &all, CPUWaitNeighboursMs: &nbrsTotal, RunQueueMs: &queue,
		Sources: map[string]report.TimingSource{}}
	if server >= 0 {
		r.Timing.ServerCPUWaitNeighboursMs = &server
	}
	return r
}

// TestIdleCloseCompareOverTheProgramsWait is the truth suite's Node idle-close compare: a
// real server's idle close is judged over what its threads waited behind other processes
// (and one wake-up of kalab's proxy), which could only have made it later. Expected by
// hand: the observed close less that wait, against |real - 6000| < 50.
func TestIdleCloseCompareOverTheProgramsWait(t *testing.T) {
	ca, err := check.Compile("abs(variant('real-node').server_idle_close_ms.p50 - variant('model-node').server_idle_close_ms.p50) < 50", check.Compare)
	if err != nil {
		t.Fatal(err)
	}
	a := scenario.Assertion{Assertion: ca, File: "servers.yaml", Line: 52, Col: 5}
	st := scenario.Settings{Clock: scenario.ClockReal, Server: scenario.Server{Exec: "node"}}
	model := &report.Run{TimeScale: 1, Clock: scenario.ClockVirtual,
		Metrics: check.FromFlat(map[string]float64{"server_idle_close_ms.p50": 6000})}
	for _, tc := range []struct {
		name          string
		close, server float64 // observed close; the program's wait behind other processes (ms)
		sched, nbrs   float64 // kalab's longest wait to run (ms) and the neighbours' share of its waits
		want          string
		link          float64 // the link's latest timer (ms)
	}{
		{"quiet: the late close fails as today", 6212.2, 0, 0.3, 0, "fail", 0},
		{"the issue's run: 230 ms of the program's wait could have made 212 ms of lateness", 6212.2, 230, 0.3, 0, "no verdict", 0},
		{"a breach well outside the wait fails: 6212.2 - 100 is still 112 off", 6212.2, 100, 0.3, 0, "fail", 0},
		{"the proxy's wait counts too: 100 + 0.5 x 122 reaches 6051.2, not below 6050", 6212.2, 100, 122, 0.5, "fail", 0},
		{"and 100 + 0.5 x 125 reaches 6049.7", 6212.2, 100, 125, 0.5, "no verdict", 0},
		{"quiet and on time: passes as today", 6000.8, 3, 0.3, 0.5, "pass", 0},
		{"on time, but 60 ms of wait could hide an early close at 5940.8", 6000.8, 60, 0.3, 0, "no verdict", 0},
		{"the proxy's longest wake-up is the link's when its timers were later: 100 + 70 reaches 6042.2", 6212.2, 100, 5, 1, "no verdict", 70},
		{"but only the neighbours' share of it: 100 + 0.5 x 70 reaches 6077.2", 6212.2, 100, 5, 0.5, "fail", 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real := realRun(map[string]float64{"server_idle_close_ms.p50": tc.close}, 0.05, tc.nbrs, 100, tc.server)
			real.Timing.Sources[srcSched] = report.TimingSource{Max: tc.sched}
			real.Timing.Sources[SrcLink] = report.TimingSource{Max: tc.link}
			real.Timing.TimerRanges = TimerRanges(st, real)
			runs := map[string]*report.Run{"real-node": real, "model-node": model}
			pass, err := a.EvalCompare(func(v string) (check.Metrics, bool) { r, ok := runs[v]; return r.Metrics, ok })
			if err != nil {
				t.Fatal(err)
			}
			why := CompareFlip(a, runs, pass)
			if got := outcome(pass, why); got != tc.want {
				t.Fatalf("%s (reason %q); want %s", got, why, tc.want)
			}
			if why != "" && (!Unjudged(why) || !strings.Contains(why, "real server's own idle timer") || !strings.Contains(why, "behind other processes")) {
				t.Errorf("reason %q does not name the timer and the wait", why)
			}
		})
	}
}

// TestAcceptCountsOverTheNeighboursCPU is the listen-queue burst's expect checks (400
// connections, one accept per 2 ms, real clock): the counts the accept loop decides are
// judged over how many accepts other processes' CPU could have cost or given, two
// wake-ups a connection at queue x share each (never more than their whole wait), one
// accept per 2 ms of it. Expected by hand:
//   - quiet, as measured alone here (0.043 ms a slice, 37.4% of it behind other processes,
//     198.7 ms in all): 2 x 400 x 0.0161 = 12.9 ms, 6 whole accepts either way;
//   - beside two CPU hogs (2 ms a slice, 90%, 13.8 s in all): 2 x 400 x 1.8 = 1,440 ms,
//     720 accepts: every count of the run could be anything.
func TestAcceptCountsOverTheNeighboursCPU(t *testing.T) {
	st := scenario.Settings{Clock: scenario.ClockReal, Server: scenario.Server{AcceptDelay: scenario.Duration(2 * time.Millisecond)}}
	quiet := [3]float64{0.043, 198.7 / 531.2, 198.7}
	hogs := [3]float64{2, 0.9, 13800}
	for _, tc := range []struct {
		expr     string
		timeouts float64
		cpu      [3]float64
		want     string
	}{
		{"errors_by_class.timeout <= requests - 34", 119, quiet, "pass"},
		{"errors_by_class.timeout <= requests - 34", 374, quiet, "fail"},       // 374 - 6 = 368 > 366
		{"errors_by_class.timeout <= requests - 34", 372, quiet, "no verdict"}, // 372 - 6 = 366
		{"errors_by_class.timeout <= requests - 34", 375, hogs, "no verdict"},  // the run
		{"errors_by_class.timeout <= requests - 34", 119, hogs, "no verdict"},  // 119 + 720
		{"errors_by_class.timeout >= 20", 0, quiet, "fail"},                    // 0 + 6 < 20: a real breach
		{"errors_by_class.timeout >= 20", 14, quiet, "no verdict"},             // 14 + 6 = 20
		{"errors_by_class.timeout >= 20", 13, quiet, "fail"},                   // 13 + 6 = 19
		{"errors == errors_by_class.timeout", 375, hogs, "pass"},               // they move together
		{"server_connections < connections", 375, hogs, "pass"},                // lowered together by at most 25: 0 < 375
		{"errors == 0", 5, quiet, "no verdict"},                                // 5 - 6 stops at 0
		{"errors == 0", 0, [3]float64{0.043, 0.374, 198.7 / 400}, "pass"},      // 2 x 400 x 0.016 = 12.9 but at most 0.5 ms in all: no whole accept
	} {
		ca, err := check.Compile(tc.expr, check.Expect)
		if err != nil {
			t.Fatal(err)
		}
		a := scenario.Assertion{Assertion: ca, File: "14.yaml", Line: 38, Col: 9}
		r := realRun(map[string]float64{"requests": 400, "connections": 400, "errors": tc.timeouts,
			"errors_by_class.timeout": tc.timeouts, "server_connections": 400 - tc.timeouts}, tc.cpu[0], tc.cpu[1], tc.cpu[2], -1)
		r.Timing.TimerRanges = TimerRanges(st, r)
		pass, err := a.Eval(r.Metrics)
		if err != nil {
			t.Fatal(err)
		}
		why := ExpectCPUFlip([]scenario.Assertion{a}, r)
		if got := outcome(pass, why); got != tc.want {
			t.Errorf("%s at %.0f timeouts, %v: %s (reason %q); want %s", tc.expr, tc.timeouts, tc.cpu, got, why, tc.want)
		}
		if why != "" && (!strings.Contains(why, "14.yaml:38") || !strings.Contains(why, "accept_delay")) {
			t.Errorf("reason %q does not name the check and the timer", why)
		}
	}
}

// TestRealTimersQualifyByWhatProducesThem: the table decides by the run's settings which
// metrics have a range; a virtual run, an embedded server's idle close, and a server with
// no paced accept loop have none.
func TestRealTimersQualifyByWhatProducesThem(t *testing.T) {
	flat := map[string]float64{"server_idle_close_ms.p50": 6000, "errors": 3, "errors_by_class.timeout": 3,
		"connections": 10, "latency_ms.p50": 50, "requests": 10}
	r := realRun(flat, 1, 1, 1000, 200)
	pace := scenario.Duration(2 * time.Millisecond)
	for _, tc := range []struct {
		name string
		st   scenario.Settings
		want []string
	}{
		{"a real server", scenario.Settings{Clock: scenario.ClockReal, Server: scenario.Server{Command: "srv {port}"}},
			[]string{"server_idle_close_ms.max", "server_idle_close_ms.min", "server_idle_close_ms.p50"}},
		{"the embedded server, paced", scenario.Settings{Clock: scenario.ClockReal, Server: scenario.Server{AcceptDelay: pace}},
			[]string{"connections", "errors", "errors_by_class.", "failed_attempts", "listen_overflows", "proxy_connections", "server_connections", "syn_retried_connects"}},
		{"the embedded server, not paced", scenario.Settings{Clock: scenario.ClockReal}, nil},
		{"virtual", scenario.Settings{Clock: scenario.ClockVirtual, Server: scenario.Server{AcceptDelay: pace}}, nil},
	} {
		got := TimerRanges(tc.st, r)
		seen := map[string]bool{}
		for m := range got {
			if strings.HasPrefix(m, "errors_by_class.") {
				m = "errors_by_class."
			}
			seen[m] = true
		}
		if names := slices.Sorted(maps.Keys(seen)); strings.Join(names, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: ranges for %v; want %v", tc.name, names, tc.want)
		}
		if _, ok := got["latency_ms.p50"]; ok {
			t.Errorf("%s: a latency is the per-check rule's, not a real timer's", tc.name)
		}
	}
}

// TestServerTimerLateAgainstTheCountRule: a real Node server closes idle connections at
// 6 s and the bursts pause 6.3 s, so the count rule gives its idle close half the 300 ms
// gap, 150 ms. Its lateness from the CPU is what its threads waited behind other processes
// plus the neighbours' share of kalab's longest wait to run (the proxy stamps the close).
// Expected by hand: 100 + 0.5 x 40 = 120 ms is inside; 140 + 0.5 x 40 = 160 ms is not.
func TestServerTimerLateAgainstTheCountRule(t *testing.T) {
	st := scenario.Settings{Clock: scenario.ClockReal, Network: scenario.Network{RTT: scenario.Duration(50 * time.Millisecond)},
		Server: scenario.Server{Exec: "node", IdleTimeout: scenario.Duration(6 * time.Second)},
		Load:   scenario.Load{Requests: 4, Burst: 2, Pause: scenario.Range{Min: scenario.Duration(6300 * time.Millisecond), Max: scenario.Duration(6300 * time.Millisecond)}}}
	ca, err := check.Compile("connections == 2", check.Expect)
	if err != nil {
		t.Fatal(err)
	}
	a := scenario.Assertion{Assertion: ca, File: "servers.yaml", Line: 22, Col: 5}
	tol := tolerances([]read{{metric: "connections", by: "connections in the expect check at servers.yaml:22", expect: &a, check: &a}}, st, 1, nil)
	for _, tc := range []struct {
		server float64
		want   bool
	}{{100, false}, {140, true}} {
		r := realRun(map[string]float64{"connections": 2}, 0.05, 0.5, 100, tc.server)
		r.Timing.Sources[srcSched] = report.TimingSource{Max: 40}
		why := ServerTimerLate(tol, r.Timing)
		if (why != "") != tc.want {
			t.Errorf("program wait %.0f ms: reason %q; want one: %v", tc.server, why, tc.want)
		}
		if tc.want && !strings.Contains(why, "160.00 ms late") || tc.want && !strings.Contains(why, "150.00 ms set by connections") {
			t.Errorf("reason %q does not give the lateness and the limit", why)
		}
	}
	if why := ServerTimerLate(tol, realRun(nil, 0.05, 0.5, 100, -1).Timing); why != "" {
		t.Errorf("a run without a real server program: %q", why)
	}
}
