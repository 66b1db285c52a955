package runner

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// cpuRun is a run of 100 requests with a p50 latency at a time scale, over a link of
// trips, whose threads waited queue real ms for a core each time they got one, the share
// nbrs of it behind other processes.
func cpuRun(p50, scale, queue, nbrs float64, trips int) *report.Run {
	r := &report.Run{Status: report.StatusPass, TimeScale: scale}
	r.Metrics.Requests, r.Metrics.LatencyMs.P50 = 100, p50
	total, others := 100.0, 100*nbrs
	r.Timing = &report.Timing{CPUWaitMs: &total, CPUWaitNeighboursMs: &others, RunQueueMs: &queue, LinkTrips: trips,
		Sources: map[string]report.TimingSource{}}
	return r
}

// TestExpectJudgedOverTheNeighboursCPU: an expect check whose verdict the CPU other
// processes took could change gives no verdict; the run's own wait, however large, does not
// count. Expected values by hand: other processes could add run_queue_ms x their share x
// (2 x link_trips + 1) / time_scale to a request; "latency_ms.p50 <= 23" observed at 23.5 fails
// by 0.5 ms.
func TestExpectJudgedOverTheNeighboursCPU(t *testing.T) {
	ca, err := check.Compile("latency_ms.p50 <= 23", check.Expect)
	if err != nil {
		t.Fatal(err)
	}
	expect := []scenario.Assertion{{Assertion: ca, File: "s.yaml", Line: 4, Col: 7}}
	for _, tc := range []struct {
		name        string
		p50, scale  float64
		queue, nbrs float64
		trips       int
		wantFlip    bool
	}{
		{"quiet neighbours: 0.1 ms", 23.5, 1, 0.1, 1, 0, false},
		{"the run's own wait does not count: 5 ms, none of it neighbours'", 23.5, 1, 5, 0, 0, false},
		{"busy neighbours: 1 ms", 23.5, 1, 1, 1, 0, true},
		{"half of 0.4 ms over three wake-ups: 0.6 ms", 23.5, 1, 0.4, 0.5, 1, true},
		{"0.1 ms of real time is 2 ms at time scale 0.05", 23.5, 0.05, 0.1, 1, 0, true},
		{"a failure far from its bound stands", 40, 1, 1, 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := expectCPUFlip(expect, cpuRun(tc.p50, tc.scale, tc.queue, tc.nbrs, tc.trips))
			if (why != "") != tc.wantFlip {
				t.Fatalf("reason %q; want a reason: %v", why, tc.wantFlip)
			}
			if tc.wantFlip && (!strings.Contains(why, "s.yaml:4") || !strings.Contains(why, "behind other processes")) {
				t.Errorf("reason %q does not name the check and the neighbours' wait", why)
			}
		})
	}
}

// TestCompareJudgedOverTheNeighboursCPU: a compare is evaluated over what other processes'
// CPU could have added to each operand, on top of its link's lateness. By hand: the warm
// run's p50 of 47 over three trips at 0.05 ms link lateness may be 47 - 0.15 - q x 7 with
// q ms of neighbours' wait per slice (two wake-ups a trip and the answer); 150 / (47 - x)
// <= 3.3 holds up to x = 1.55: q = 0.15 (x = 1.2) keeps the pass, q = 0.25 (x = 1.9) could
// flip it, unless the warm run's link has a round trip of 46 ms: no request is faster, so
// 150 / 46 = 3.26 bounds the ratio and the pass holds. A run with a failed request has no
// such floor (a failure can end before its round trip).
func TestCompareJudgedOverTheNeighboursCPU(t *testing.T) {
	src := "variant('cold').latency_ms.p50 / variant('warm').latency_ms.p50 <= 3.3"
	ca, err := check.Compile(src, check.Compare)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario.Scenario{Name: "s", Compare: []scenario.Assertion{{Assertion: ca, File: "s.yaml", Line: 3, Col: 5}}}
	run := func(p50, queue, nbrs, floor, errors float64) *report.Run {
		r := cpuRun(p50, 1, queue, nbrs, 3)
		r.Timing.Sources[srcLink] = report.TimingSource{N: 100, P50: 0.05, P99: 0.5, Max: 1}
		if floor > 0 {
			r.Timing.LatencyFloorMs = &floor
		}
		r.Metrics.Errors = errors
		return r
	}
	for _, tc := range []struct {
		name        string
		queue, nbrs float64
		floor       float64
		errors      float64
		wantVerdict string
	}{
		{"neighbours inside the margin", 0.15, 1, 0, 0, report.VerdictPass},
		{"own wait does not count", 5, 0, 0, 0, report.VerdictPass},
		{"neighbours enough to flip it", 0.25, 1, 0, 0, report.VerdictNotEvaluated},
		{"not below the link's round trip", 0.25, 1, 46, 0, report.VerdictPass},
		{"no floor once a request failed", 0.25, 1, 46, 1, report.VerdictNotEvaluated},
		{"a floor too low to matter", 0.25, 1, 44, 0, report.VerdictNotEvaluated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := map[string]*report.Run{"cold": run(150, 0, 0, 0, 0), "warm": run(47, tc.queue, tc.nbrs, tc.floor, tc.errors)}
			c := compare(sc, runs, Options{}).Checks[0]
			if got := c.Verdict(); got != tc.wantVerdict {
				t.Fatalf("verdict %s, want %s (not evaluated: %q)", got, tc.wantVerdict, c.NotEvaluated)
			}
			if tc.wantVerdict == report.VerdictNotEvaluated && !strings.Contains(c.NotEvaluated, "in warm kalab's threads waited 0.250 ms for a core") {
				t.Errorf("reason %q does not name the neighbours' wait", c.NotEvaluated)
			}
		})
	}
}

// TestCPURuleJudgesARealRun: a run beside busy processes (twice as many as cores), with
// an expect check its neighbours' wait could flip, has no verdict and says why. Its timers
// are not judged here (--lag-tolerance 1e6), so only the CPU-pressure rule can take the
// verdict away. By hand: at time scale 0.01 every real millisecond is 100 scenario ms; the
// fastest request of 20 new plain connections at 10 ms RTT takes about 0.5 ms of real time
// (latency_ms.min about 50; 20 in the model: the SYN-ACK's trip and the request's), and a
// mean wait per slice of 0.1 ms behind the neighbours over the 7 wake-ups of such a request
// (3 link trips and the answer) could add 70 ms to it: "latency_ms.min >= 15" can flip, as
// the observed min less that reaches the link's floor of one round trip (10). Beside the
// hogs the wait per slice is 0.4-3 ms. "latency_ms.min >= 10" could not: no request is
// faster than its round trip, so the rule keeps that verdict.
func TestCPURuleJudgesARealRun(t *testing.T) {
	if _, ok := lag.StartCPUWait().Wait(); !ok {
		t.Skip("this system has no per-thread run-queue delay (schedstat)") // skip: a kernel without schedstat: not in .ci/allowed-skips, so CI fails on it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 2 * runtime.NumCPU() {
		c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	}
	p := plan(t, "name: a\ntime_scale: 0.01\nnetwork: {rtt: 10ms}\nclient: {keepalive: false}\nload: {requests: 20}\nexpect: [\"latency_ms.min >= 15\", \"latency_ms.min >= 10\"]\n")
	opt := opts(t)
	opt.LagTolerance, opt.Attempts = 1e6, 1
	out, err := Execute(ctx, p, opt)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	if r.Timing == nil || r.Timing.RunQueueMs == nil {
		t.Fatalf("the run recorded no wait per slice: %+v", r.Timing)
	}
	t.Logf("min %.1f ms, wait per slice %.3f ms, %.0f%% behind other processes", r.Metrics.LatencyMs.Min, *r.Timing.RunQueueMs, 100*neighbourShare(r.Timing))
	if r.Status != report.StatusError || !strings.Contains(r.Timing.Reason, "CPU pressure could change the expect check") ||
		!strings.Contains(r.Timing.Reason, "latency_ms.min >= 15") {
		t.Errorf("status %s, reason %q; want no verdict from the CPU-pressure rule", r.Status, r.Timing.Reason)
	}
}
