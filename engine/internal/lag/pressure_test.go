package lag

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestPressureShareRisesWithBusyGoroutines(t *testing.T) {
	if _, ok := cpuStall(); !ok {
		t.Skip("no /proc/pressure/cpu on this system") // skip: a kernel without PSI: not in .ci/allowed-skips, so CI fails on it
	}
	measure := func(busy int) float64 {
		p := StartPressure()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range busy {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					//lint:ignore SA5004 the spin is the point: it keeps a core busy until stop
					default:
					}
				}
			})
		}
		time.Sleep(400 * time.Millisecond)
		close(stop)
		wg.Wait()
		share, ok := p.Share()
		if !ok {
			t.Fatal("Share: not ok where cpuStall was")
		}
		return share
	}
	// Twice as many busy goroutines as cores (and GOMAXPROCS raised to match) keep tasks
	// waiting for a CPU most of the span.
	prev := runtime.GOMAXPROCS(2 * runtime.NumCPU())
	defer runtime.GOMAXPROCS(prev)
	loaded := measure(2 * runtime.NumCPU())
	t.Logf("CPU pressure with %d busy goroutines on %d CPUs: %.2f", 2*runtime.NumCPU(), runtime.NumCPU(), loaded)
	if loaded < 0.3 {
		t.Errorf("CPU pressure %.2f with twice as many busy threads as CPUs, want at least 0.30", loaded)
	}
}
