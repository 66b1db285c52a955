package judge

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
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
			why := ExpectCPUFlip(expect, cpuRun(tc.p50, tc.scale, tc.queue, tc.nbrs, tc.trips))
			if (why != "") != tc.wantFlip {
				t.Fatalf("reason %q; want a reason: %v", why, tc.wantFlip)
			}
			if tc.wantFlip && (!strings.Contains(why, "s.yaml:4") || !strings.Contains(why, "behind other processes")) {
				t.Errorf("reason %q does not name the check and the neighbours' wait", why)
			}
		})
	}
}
