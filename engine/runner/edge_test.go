package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"
	"github.com/kalab-dev/kalab/engine/report"
)

// edgeSrc: three bursts of 100 requests, 960 ms apart, against a server that closes after
// 1 s idle, at 10 ms RTT on the real clock. The race window is (990 ms, 1,000 ms): the plan
// keeps every pause 30 ms below it, so no request races and errors == 0 holds. Burst 1 ends
// about 1,010 ms in (a 20 ms first request, 99 of 10 ms), burst 2 starts about 1,970 ms in
// and ends about 2,960 ms in.
const edgeSrc = `
name: edge
clock: real
network: {rtt: 10ms}
server: {idle_timeout: 1s, keepalive_hint: false}
client: {preset: node-agent}
load: {requests: 300, burst: 100, pause: 960ms}
expect: ["errors == 0"]
`

// edgeRun runs edgeSrc with one link timer held 40 ms late: skip timers after the first
// that ends burst 1's pause (the chunk of burst 2's first request).
func edgeRun(t *testing.T, skip int) *report.Run {
	t.Helper()
	o := opts(t)
	o.newTimers = func() *judge.Timers {
		tm := &judge.Timers{}
		tm.Link.HoldAfterQuiet(500*time.Millisecond, skip, 40*time.Millisecond)
		return tm
	}
	out, err := Execute(context.Background(), plan(t, edgeSrc), o)
	if err != nil {
		t.Fatal(err)
	}
	return out.Runs[0]
}

// TestLateChunkAtTheEdgeIsNoVerdict: one chunk 40 ms late among about 600 (the link's
// p99 does not see it) is the request that opens burst 2, sent 960 ms after the response
// before it: 10 + 40 ms more and it reaches the server after its 1 s idle close, a reset
// the plan never made (status fail, errors 1, without the edge rule). The edge rule sees
// the late chunk 30 ms from the race window and gives no verdict. The same chunk in the
// middle of burst 2, far from any edge, leaves the verdict alone: pass.
func TestLateChunkAtTheEdgeIsNoVerdict(t *testing.T) {
	realTimeOnly(t)
	// Not parallel, and one after the other: a chunk held 40 ms late must be the only
	// lateness near the edge, not other tests' load.
	t.Run("at the edge", func(t *testing.T) {
		r := edgeRun(t, 0) // burst 2's first request
		if r.Status == report.StatusPass || r.Status == report.StatusFail {
			t.Fatalf("a chunk 40 ms late at the race window's edge gave a verdict: %s, errors %.0f, timing %+v", r.Status, r.Metrics.Errors, r.Timing)
		}
		reasons := strings.Join(append(r.Timing.Reruns, r.Timing.Reason), "; ")
		if !strings.Contains(reasons, "from the edge at 990ms") {
			t.Errorf("no attempt names the edge: %s", reasons)
		}
	})
	t.Run("away from every edge", func(t *testing.T) {
		r := edgeRun(t, 100) // burst 2's 51st request, two chunks a request
		skipIfNoisy(t, &Outcome{Runs: []*report.Run{r}})
		if r.Status != report.StatusPass {
			t.Fatalf("a chunk 40 ms late away from every edge moved the verdict: %s %s, checks %+v", r.Status, r.Error, r.Checks)
		}
	})
}
