package stage

import "time"

// The FIN/RST relay: what a direction does with its sender's half-close or reset, and
// the order everything it carries is released in.
//
//   - A FIN (the sender's clean end of file) or a reset is delayed like data, one drawn
//     one-way delay and never before the handshake's floor (Path.Due), but takes no
//     part in the congestion window or pacing, which time data only.
//   - It is released behind the data sent before it: nothing of a direction overtakes
//     what was queued ahead of it, whatever the jitter drew (Sequence). The other end
//     then sees a FIN as a half-close after the last byte, and a reset as a reset.
//   - A direction carries one reset: a second (a failed write and a failed read of the
//     same dead connection) is dropped.
//
// A connection the upstream refused is answered with a reset one round trip after the
// client connected (handshake.go).

// Kind is what an item of a direction carries.
type Kind uint8

// The kinds of item.
const (
	Data Kind = iota // bytes to write
	Fin              // the source half-closed: half-close the destination
	Rst              // the source reset: reset the destination
)

// Sequence is the order stage of one direction: it gives each item its release instant
// in push order. Its user serializes the calls.
type Sequence struct {
	// NotBefore holds every item until then: the virtual link's modelled accept, before
	// which the client's bytes wait at the server's edge. It does not move departures.
	NotBefore time.Time
	last      time.Time // release instant of the newest item
	reset     bool      // a reset was placed
}

// Place returns when an item of kind k due at due is released: due, or later when
// NotBefore or the item placed before it is later, so items never overtake each other.
// It returns false for a second reset, which is dropped.
func (s *Sequence) Place(k Kind, due time.Time) (time.Time, bool) {
	if k == Rst {
		if s.reset {
			return time.Time{}, false
		}
		s.reset = true
	}
	if due.Before(s.NotBefore) {
		due = s.NotBefore
	}
	if due.Before(s.last) {
		due = s.last
	}
	s.last = due
	return due, true
}
