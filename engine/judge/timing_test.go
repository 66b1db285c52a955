package judge

import (
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
)

// TestMarginOfAnExpectCheck: the margin is the lateness per trip that, taken off the
// latencies the check reads (trips x lateness, in scenario time), first changes its verdict.
func TestMarginOfAnExpectCheck(t *testing.T) {
	t.Parallel()
	compile := func(src string) *check.Assertion {
		a, err := check.Compile(src, check.Expect)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var m check.Metrics
	m.LatencyMs.P50, m.LatencyMs.Min, m.Connections = 26, 13, 1
	ms := time.Millisecond
	cases := []struct {
		expr  string
		scale float64
		want  time.Duration
		ok    bool
	}{
		{"latency_ms.p50 <= 23", 1, ms, true},                            // fails at 26; passes once 3 x 1 ms is off
		{"latency_ms.p50 <= 23", 0.1, ms / 10, true},                     // scenario ms are a tenth of real ones
		{"latency_ms.min >= 10", 1, ms, true},                            // passes at 13; fails once 3 x 1 ms is off
		{"latency_ms.p50 <= 30", 1, 20 * ms, true},                       // lateness only raises: never flips
		{"connections == 1", 1, 0, false},                                // reads no latency
		{"latency_ms.p50 >= 20 && latency_ms.p50 < 30", 1, 2 * ms, true}, // the lower edge, 6 ms away
	}
	for _, c := range cases {
		got, ok := margin(compile(c.expr), m, 3, c.scale, 0, 20*ms)
		if ok != c.ok || got > c.want || got < c.want-c.want/100-20*ms/200 {
			t.Errorf("%s at scale %g: margin %v (ok %v), want %v (ok %v) to one step", c.expr, c.scale, got, ok, c.want, c.ok)
		}
	}
}
