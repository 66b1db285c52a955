package stage

import "time"

// Path chains the stages of one direction of a connection: the sender's window
// (slow start and restart after idle), its pacing, and the one-way delay. The window is
// the direction's own; the pacer may be shared (Pacers) and the delays are the link's.
// Only the direction's reader calls Data; Due uses nothing of the window, so any
// goroutine may call it.
type Path struct {
	// Floor is the handshake's floor: nothing is released earlier.
	Floor  time.Time
	Window Window
	Pace   *Pacer // nil without a bandwidth limit
	Delay  *Latency
}

// Shaped reports whether data goes through the window or pacing, so that Data can
// split it; otherwise a chunk is timed whole by the delay alone, like a close.
func (p *Path) Shaped() bool { return p.Window.on || p.Pace != nil }

// Data times n bytes that reached the direction at stamp: nothing leaves before the
// handshake lets it (Floor less the one-way trip), the window splits the bytes into
// pieces by the round each leaves in, the pacer (when set) serializes them, and each
// piece is due one drawn one-way delay after its last byte left, never before Floor.
// The pieces are appended to out with At holding that due time, in order; the caller
// places each in the Sequence.
func (p *Path) Data(stamp time.Time, n int, out []Piece) []Piece {
	ready := stamp
	if dep := p.Floor.Add(-p.Delay.half); ready.Before(dep) {
		ready = dep
	}
	first := len(out)
	out = p.Window.Depart(ready, n, out)
	for i := first; i < len(out); i++ {
		left := out[i].At
		if p.Pace != nil {
			left = p.Pace.Send(left, out[i].N)
		}
		out[i].At = p.Delay.Due(left, p.Floor)
	}
	return out
}

// Due times an item the sender made at stamp whole: a FIN, a reset, or a chunk of data on an
// unshaped path: one drawn one-way delay later, never before Floor.
func (p *Path) Due(stamp time.Time) time.Time { return p.Delay.Due(stamp, p.Floor) }
