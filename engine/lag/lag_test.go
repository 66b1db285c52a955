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
