package runner

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// cpuRun is a run of 100 requests with a p50 latency, at a time scale, whose threads
// waited own+neighbours real ms for a core, neighbours of it behind other processes.
func cpuRun(p50, scale, own, neighbours float64) *report.Run {
	r := &report.Run{Status: report.StatusPass, TimeScale: scale}
	r.Metrics.Requests, r.Metrics.LatencyMs.P50 = 100, p50
	total := own + neighbours
	r.Timing = &report.Timing{CPUWaitMs: &total, CPUWaitNeighboursMs: &neighbours, Sources: map[string]report.TimingSource{}}
	return r
}

// TestExpectJudgedOverTheNeighboursCPU: an expect check whose verdict the CPU other
// processes took could change gives no verdict; the run's own wait, however large, does not
// count. Expected values by hand: 100 requests, so N ms of neighbours' wait is N/100 ms per
// request at time scale 1 and N/5 at 0.05; "latency_ms.p50 <= 23" observed at 23.5 fails
// by 0.5 ms.
func TestExpectJudgedOverTheNeighboursCPU(t *testing.T) {
	ca, err := check.Compile("latency_ms.p50 <= 23", check.Expect)
	if err != nil {
		t.Fatal(err)
	}
	expect := []scenario.Assertion{{Assertion: ca, File: "s.yaml", Line: 4, Col: 7}}
	for _, tc := range []struct {
		name             string
		scale, own, nbrs float64
		wantFlip         bool
	}{
		{"quiet neighbours: 0.1 ms a request", 1, 0, 10, false},
		{"the run's own wait does not count", 1, 5000, 10, false},
		{"busy neighbours: 1 ms a request", 1, 0, 100, true},
		{"0.1 ms a request of real time is 2 ms at time scale 0.05", 0.05, 0, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := expectCPUFlip(expect, cpuRun(23.5, tc.scale, tc.own, tc.nbrs))
			if (why != "") != tc.wantFlip {
				t.Fatalf("reason %q; want a reason: %v", why, tc.wantFlip)
			}
			if tc.wantFlip && (!strings.Contains(why, "s.yaml:4") || !strings.Contains(why, "other processes made its threads wait")) {
				t.Errorf("reason %q does not name the check and the neighbours' wait", why)
			}
		})
	}
	// A verdict far from its bound stands beside busy neighbours.
	if why := expectCPUFlip(expect, cpuRun(40, 1, 0, 100)); why != "" {
		t.Errorf("a p50 of 40 against <= 23 with 1 ms of neighbours' wait a request: %q; want the failure to stand", why)
	}
}

// TestCompareJudgedOverTheNeighboursCPU: a compare is evaluated over what other processes'
// CPU could have added to each operand, on top of its link's lateness. By hand: the warm
// run's p50 of 47 over three trips at 0.05 ms link lateness may be 47 - 0.15 - N/100 with
// N ms of neighbours' wait over its 100 requests; 150 / (47 - x) <= 3.3 holds up to
// x = 1.55: N = 100 (x = 1.15) keeps the pass, N = 200 (x = 2.15) could flip it.
func TestCompareJudgedOverTheNeighboursCPU(t *testing.T) {
	src := "variant('cold').latency_ms.p50 / variant('warm').latency_ms.p50 <= 3.3"
	ca, err := check.Compile(src, check.Compare)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario.Scenario{Name: "s", Compare: []scenario.Assertion{{Assertion: ca, File: "s.yaml", Line: 3, Col: 5}}}
	run := func(p50, own, nbrs float64) *report.Run {
		r := cpuRun(p50, 1, own, nbrs)
		r.Timing.LinkTrips = 3
		r.Timing.Sources[srcLink] = report.TimingSource{N: 100, P50: 0.05, P99: 0.5, Max: 1}
		return r
	}
	for _, tc := range []struct {
		name        string
		own, nbrs   float64
		wantVerdict string
	}{
		{"neighbours inside the margin", 0, 100, report.VerdictPass},
		{"own wait does not count", 9000, 100, report.VerdictPass},
		{"neighbours enough to flip it", 0, 200, report.VerdictNotEvaluated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := map[string]*report.Run{"cold": run(150, 0, 0), "warm": run(47, tc.own, tc.nbrs)}
			c := compare(sc, runs, Options{}).Checks[0]
			if got := c.Verdict(); got != tc.wantVerdict {
				t.Fatalf("verdict %s, want %s (not evaluated: %q)", got, tc.wantVerdict, c.NotEvaluated)
			}
			if tc.wantVerdict == report.VerdictNotEvaluated && !strings.Contains(c.NotEvaluated, "in warm other processes made its threads wait 200.0 ms") {
				t.Errorf("reason %q does not name the neighbours' wait", c.NotEvaluated)
			}
		})
	}
}
