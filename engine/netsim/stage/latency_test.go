package stage

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLatencyWithoutJitter pins the one-way delay: RTT/2, to the nanosecond, and never
// before the floor.
func TestLatencyWithoutJitter(t *testing.T) {
	o := NewLatency(101*time.Millisecond, 0, 1)
	const half = 50500 * time.Microsecond
	if o.Half() != half {
		t.Fatalf("Half = %v, want %v", o.Half(), half)
	}
	for range 3 {
		if d := o.Next(); d != half {
			t.Fatalf("Next = %v, want %v", d, half)
		}
	}
	if got := o.Due(at(time.Second), t0); !got.Equal(at(time.Second + half)) {
		t.Errorf("Due after the floor = +%v, want +%v", got.Sub(t0), time.Second+half)
	}
	floor := at(2 * time.Second)
	if got := o.Due(at(time.Second), floor); !got.Equal(floor) {
		t.Errorf("Due before the floor = +%v, want the floor +2s", got.Sub(t0))
	}
}

// TestLatencyJitterSeeded pins the jitter: each delay is RTT/2 plus the seed's next draw
// from [0, jitter], in order, so a seed repeats its delays exactly.
func TestLatencyJitterSeeded(t *testing.T) {
	const rtt, jitter = 100 * time.Millisecond, 20 * time.Millisecond
	o := NewLatency(rtt, jitter, 7)
	ref := rand.New(rand.NewPCG(7, jitterStream))
	other := NewLatency(rtt, jitter, 8)
	differ := false
	for i := range 200 {
		want := rtt/2 + time.Duration(ref.Int64N(int64(jitter)+1))
		got := o.Next()
		if got != want {
			t.Fatalf("draw %d = %v, want %v", i, got, want)
		}
		if got < rtt/2 || got > rtt/2+jitter {
			t.Fatalf("draw %d = %v outside [%v, %v]", i, got, rtt/2, rtt/2+jitter)
		}
		differ = differ || other.Next() != got
	}
	if !differ {
		t.Error("seeds 7 and 8 drew the same 200 delays")
	}
	// A jitter of 1 ns draws 0 or 1 ns.
	one := NewLatency(rtt, 1, 3)
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[one.Next()-rtt/2] = true
	}
	if len(seen) != 2 || !seen[0] || !seen[1] {
		t.Errorf("1 ns of jitter drew extras %v, want 0 and 1ns", seen)
	}
}
