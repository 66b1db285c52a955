package lag

import "time"

// Pressure measures CPU contention over a span from the kernel's pressure stall
// information: the share of wall time in which some task on the machine was ready to run
// but waited for a CPU (/proc/pressure/cpu, the "some" line; Linux 4.20+). Timer lateness
// says how late a wake-up was; this says how often anything at all had to queue for a core,
// which is what stretches the computing inside a run (a TLS handshake, a real client's
// start-up, a burst's accept loop) that no timer sees. It counts every process on the
// machine, the run's own included.
type Pressure struct {
	stall0 time.Duration
	wall0  time.Time
	ok     bool
}

// StartPressure begins a span; on a system without pressure information the span reports
// nothing.
func StartPressure() Pressure {
	s, ok := cpuStall()
	return Pressure{stall0: s, wall0: time.Now(), ok: ok}
}

// Share returns the share of the span so far (0 to 1) in which some task waited for a CPU,
// and false when the system does not say.
func (p Pressure) Share() (float64, bool) {
	if !p.ok {
		return 0, false
	}
	s, ok := cpuStall()
	wall := time.Since(p.wall0)
	if !ok || wall <= 0 {
		return 0, false
	}
	return min(max(float64(s-p.stall0)/float64(wall), 0), 1), true
}
