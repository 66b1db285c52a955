package lag

import (
	"runtime"
	"testing"
	"time"
)

// TestSchedSeesRunnableGoroutines keeps more busy goroutines than there are Ps for a
// while: each one waits for a P while the others run, so the span must report waits of
// the order of the runtime's time slice (10 ms), and a span in which goroutines only sleep
// must report far less.
func TestSchedSeesRunnableGoroutines(t *testing.T) {
	var idle Recorder
	s := StartSched()
	if !s.ok {
		t.Skip("the runtime does not report scheduling latencies") // skip: a Go without the metric: not in .ci/allowed-skips, so CI fails on it
	}
	time.Sleep(50 * time.Millisecond)
	s.Into(&idle)

	var busyRec Recorder
	s = StartSched()
	procs := runtime.GOMAXPROCS(0)
	done := make(chan struct{})
	for range 4 * procs {
		go func() {
			x := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := range 100000 {
					x += i
				}
				_ = x
			}
		}()
	}
	// The runtime records one in eight of a goroutine's waits (gTrackingPeriod in
	// runtime/runtime2.go), and a preemption is a wait: at full speed 300 ms gives about 60 of
	// them and so 7 recorded, but a process starved of its cores by the packages tested
	// beside it is preempted less often and may record none. Crowd the Ps until 8 waits are
	// recorded, for at most 5 s.
	began := time.Now()
	var b Summary
	for {
		time.Sleep(100 * time.Millisecond)
		busyRec = Recorder{}
		s.Into(&busyRec)
		b = busyRec.Summary()
		if (b.N >= 8 && time.Since(began) >= 300*time.Millisecond) || time.Since(began) >= 5*time.Second {
			break
		}
	}
	close(done)
	i := idle.Summary()
	t.Logf("busy for %v: n %d, p99 %v, max %v; sleeping: n %d, max %v", time.Since(began).Round(time.Millisecond), b.N, b.P99, b.Max, i.N, i.Max)
	if b.N == 0 {
		t.Fatalf("%d goroutines busy on %d Ps for 5 s: the runtime recorded none of their waits", 4*procs, procs)
	}
	if b.Max < 5*time.Millisecond {
		t.Errorf("%d goroutines busy on %d Ps waited at most %v to run; want at least 5 ms (Go preempts at 10 ms)", 4*procs, procs, b.Max)
	}
	if i.Max >= b.Max/2 {
		t.Errorf("a sleeping span's longest wait %v is not far below a crowded one's %v", i.Max, b.Max)
	}
}
