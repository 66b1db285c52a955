package configure

import (
	"math"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// The deadline saturates: durations that each fit a time.Duration but whose sum does not
// must give the longest deadline, never a wrapped negative one clamped to 30 s.
func TestDeadlineSaturates(t *testing.T) {
	long := scenario.Duration(2_000_000 * time.Hour)
	for _, tc := range []struct {
		name string
		st   scenario.Settings
		sc   shape.Scale
		want time.Duration
	}{
		{"pauses", scenario.Settings{Load: scenario.Load{Requests: 10_000, Burst: 1, Pause: scenario.Range{Min: long, Max: long}}}, 1, math.MaxInt64},
		{"slow rate", scenario.Settings{Load: scenario.Load{Requests: 1_000_000, Rate: 1e-9}}, 1, math.MaxInt64},
		{"scale", scenario.Settings{Network: scenario.Network{RTT: long}, Load: scenario.Load{Requests: 1}}, 100, math.MaxInt64},
		// 1 request, 20 ms and a 10 ms round trip: 3*(4*10+20) ms + 30 s.
		{"ordinary", scenario.Settings{Network: scenario.Network{RTT: scenario.Duration(10 * time.Millisecond)}, Load: scenario.Load{Requests: 1}}, 1, 30*time.Second + 180*time.Millisecond},
	} {
		if got := Deadline(tc.st, tc.sc); got != tc.want {
			t.Errorf("%s: deadline = %v; want %v", tc.name, got, tc.want)
		}
	}
	if got := shape.Scale(100).D(long); got != math.MaxInt64 {
		t.Errorf("scaled duration = %v; want it saturated", got)
	}
}
