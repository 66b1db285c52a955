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
	time.Sleep(300 * time.Millisecond)
	close(done)
	s.Into(&busyRec)
	b, i := busyRec.Summary(), idle.Summary()
	t.Logf("busy: n %d, p99 %v, max %v; sleeping: n %d, max %v", b.N, b.P99, b.Max, i.N, i.Max)
	if b.Max < 5*time.Millisecond {
		t.Errorf("%d goroutines busy on %d Ps for 300 ms waited at most %v to run; want at least 5 ms (Go preempts at 10 ms)", 4*procs, procs, b.Max)
	}
	if i.Max >= b.Max/2 {
		t.Errorf("a sleeping span's longest wait %v is not far below a crowded one's %v", i.Max, b.Max)
	}
}
