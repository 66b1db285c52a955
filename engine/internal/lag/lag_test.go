package lag

import (
	"math"
	"sync"
	"testing"
	"time"
)

func TestSummaryPercentiles(t *testing.T) {
	t.Parallel()
	var r Recorder
	// 1..1000 µs: p50 = 500 µs, p99 = 990 µs, max = 1000 µs.
	for i := 1; i <= 1000; i++ {
		r.Add(time.Duration(i) * time.Microsecond)
	}
	s := r.Summary()
	if s.N != 1000 || s.Max != time.Millisecond {
		t.Fatalf("n=%d max=%v, want 1000 and 1ms", s.N, s.Max)
	}
	if want := 500500 * time.Nanosecond; s.Mean != want { // (1+1000)/2 µs, exact: the sum is kept in ns
		t.Errorf("mean %v, want %v", s.Mean, want)
	}
	for _, c := range []struct {
		got, want time.Duration
	}{{s.P50, 500 * time.Microsecond}, {s.P99, 990 * time.Microsecond}} {
		if rel := math.Abs(float64(c.got-c.want)) / float64(c.want); rel > 1.0/32 {
			t.Errorf("got %v, want %v within 1/32", c.got, c.want)
		}
	}
}

func TestEarlyCountsAsZeroAndNilIgnores(t *testing.T) {
	t.Parallel()
	var r Recorder
	r.Add(-time.Second)
	if s := r.Summary(); s.N != 1 || s.Max != 0 || s.P99 != 0 {
		t.Fatalf("early timer: %+v, want one sample of 0", s)
	}
	var nilRec *Recorder
	nilRec.Add(time.Second)
	nilRec.Since(time.Now())
	if s := nilRec.Summary(); s.N != 0 {
		t.Fatalf("nil recorder summary %+v", s)
	}
}

func TestWatchCountsOver(t *testing.T) {
	t.Parallel()
	var r Recorder
	r.Watch(2 * time.Millisecond)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				r.Add(time.Duration(i%4) * time.Millisecond) // 0,1,2,3: only 3 is over
			}
		}()
	}
	wg.Wait()
	if over, n := r.Over(); over != 100 || n != 400 {
		t.Fatalf("over=%d n=%d, want 100 of 400", over, n)
	}
}

// TestHoldMakesTheTimerLate: a held recorder returns from Since no sooner than the hold
// after the timer was due, and records that lateness; released, it returns at once.
func TestHoldMakesTheTimerLate(t *testing.T) {
	t.Parallel()
	var r Recorder
	r.Hold(3 * time.Millisecond)
	for i := 0; i < 5; i++ {
		due := time.Now()
		r.Since(due)
		if late := time.Since(due); late < 3*time.Millisecond {
			t.Fatalf("Since returned %v after the timer was due, want at least the 3ms hold", late)
		}
	}
	if s := r.Summary(); s.P50 < 3*time.Millisecond*63/64 || s.N != 5 {
		t.Fatalf("held recorder: %+v, want 5 samples of at least 3 ms", s)
	}
	r.Hold(0)
	due := time.Now().Add(-time.Millisecond)
	start := time.Now()
	r.Since(due)
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("released recorder waited %v", d)
	}
	var nilRec *Recorder
	nilRec.Hold(time.Second) // ignored, like every call on a nil recorder
}
