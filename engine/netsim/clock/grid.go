package clock

import "time"

// The coalescing grid: a chunk due at t is released at the end of the
// quantum holding t, so every chunk due within one quantum, on any link of
// the process, is released by the same wake-up of the clock. The rule is
// exact: a chunk is never released before its due time, and the grid adds
// less than one quantum.

// MaxQuantum bounds the coalescing quantum: see Quantum.
const MaxQuantum = 20 * time.Microsecond

// Quantum is the coalescing quantum of a link of the given RTT: RTT/50, at
// most MaxQuantum (20 µs), so at most 2% of a one-way trip at 1 ms RTT and
// 0.08% at 50 ms. An RTT of zero gives zero: no coalescing.
func Quantum(rtt time.Duration) time.Duration {
	return min(rtt/50, MaxQuantum)
}

// epoch anchors the process's quantum grid, and the clock's own measure of
// instants (sinceEpoch). Every link shares it, so chunks of different links
// due in the same quantum share one wake-up too.
var epoch = time.Now()

// FireAt is the instant a chunk due at due is released: the end of the
// quantum holding due on a grid of step q from the process's epoch, or due
// itself when it falls on the grid or q is not positive. So FireAt(due, q)
// >= due and FireAt(due, q) - due < q: never early, less than one quantum
// late. The arithmetic is on monotonic readings (Sub, Add), never wall time.
func FireAt(due time.Time, q time.Duration) time.Time {
	if q <= 0 {
		return due
	}
	r := due.Sub(epoch) % q
	switch {
	case r > 0:
		return due.Add(q - r)
	case r < 0: // due before the epoch: the grid extends backwards
		return due.Add(-r)
	}
	return due
}

// open reports whether done is still open: a wait that ended on time but
// after its owner closed must not act.
func open(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}
