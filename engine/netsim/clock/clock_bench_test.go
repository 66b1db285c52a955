package clock

import (
	"slices"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// BenchmarkClockWake measures how late the shared clock wakes a waiter and
// the CPU each wake costs, with the kernel timer (Linux) and with the
// portable fallback, a Go timer plus a yield loop over the spin window,
// which is all macOS and Windows have. Forcing the fallback on a private
// clock is how Linux measures what other platforms get. Deadlines are 2 to
// 6 ms out, one waiter at a time, as a writer's chunk is.
func BenchmarkClockWake(b *testing.B) {
	for _, kind := range []string{"timerfd", "fallback"} {
		b.Run(kind, func(b *testing.B) {
			c := newClock()
			switch {
			case kind == "fallback" && c.tfd != nil:
				_ = c.tfd.Close()
				c.tfd = nil
			case kind == "timerfd" && c.tfd == nil:
				b.Skip("no timerfd on this platform: the fallback is the clock here") // skip: a benchmark: CI runs no benchmark
			}
			const n = 300
			var late []time.Duration
			cpu0 := lag.ProcessCPU()
			for range b.N {
				for i := range n {
					var w Waiter
					due := time.Now().Add(2*time.Millisecond + time.Duration(i%5)*time.Millisecond)
					c.Wait(&w, due, DefaultSpinWindow, nil)
					late = append(late, time.Since(due))
				}
			}
			cpu := lag.ProcessCPU() - cpu0
			if c.tfd != nil {
				_ = c.tfd.Close()
			}
			slices.Sort(late)
			q := func(p float64) float64 {
				return float64(late[int(p*float64(len(late)-1))].Nanoseconds()) / 1e3
			}
			b.ReportMetric(q(0.5), "late-p50-µs")
			b.ReportMetric(q(0.99), "late-p99-µs")
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(late)), "cpu-µs/wake")
		})
	}
}
