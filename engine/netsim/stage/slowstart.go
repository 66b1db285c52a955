package stage

import "time"

// The TCP sending model: slow start (this file), its restart after idle (restart.go), and
// a bandwidth limit (pacing.go).
//
// Each direction of a link models the sender that feeds it (the server for the download,
// the client for the upload). A chunk the link reads is "written by the sender" at its
// receive stamp; the model decides when each of its bytes leaves the sender (its
// departure), and the chunk is released RTT/2 after its last byte left.
//
//   - Slow start (RFC 5681 section 3.1, Linux's tcp_slow_start): the sender has a
//     congestion window of InitialWindow segments of MSS (1,448) bytes (RFC 6928's
//     IW10, Linux's TCP_INIT_CWND). The bytes of one window leave together in one
//     round; the next round leaves one RTT after the round began (when the ACK of its
//     first segment is back), with the window grown by the bytes acknowledged, so a
//     sender that keeps the window full doubles it every round trip. As in Linux's
//     tcp_is_cwnd_limited during slow start, the window grows only after a round that
//     used at least half of it: an application-limited sender does not inflate it.
//   - Restart after idle: see restart.go.
//   - Bandwidth: see pacing.go.
//
// Left out: loss and retransmission (so no fast recovery and no RTO backoff), the
// congestion avoidance phase after ssthresh (the window keeps doubling; only a
// bandwidth limit caps the rate), the receiver's advertised window (the link's own
// 4 MiB in-flight cap per direction stays), delayed ACKs, pacing, and ACK-clock
// spreading inside a round (a round's bytes leave at once unless bandwidth limits
// them). The handshake is modelled by the links: the SYN exchange costs one RTT and the
// window starts with the connection.

// MSS is the segment size of the model: 1,500-byte Ethernet MTU less IPv4, TCP and
// TCP timestamp option headers, what Linux uses on such a path.
const MSS = 1448

// DefaultInitialWindow is the initial congestion window in segments (RFC 6928, Linux
// since 2.6.39).
const DefaultInitialWindow = 10

// maxCwnd keeps the window's arithmetic bounded; far beyond any transfer kalab makes.
const maxCwnd = 1 << 40

// Window is the congestion state of one direction's sender: slow start and its restart
// after idle. Only the direction's reader uses it.
type Window struct {
	on       bool // slow start modelled
	restart  bool // slow start after idle
	rtt, rto time.Duration
	iw       int64
	cwnd     int64
	active   bool      // a round has begun
	start    time.Time // departure of the current round's first byte
	left     int64     // bytes the current round may still send
	sent     int64     // bytes the current round sent
	lastDep  time.Time // departure of the last byte sent
	rounds   int64     // rounds begun
}

// NewWindow returns the window of a sender on a link of round trip rtt. initial is the
// initial window in segments: zero means DefaultInitialWindow, and a negative value
// turns slow start off, so every chunk leaves as it arrives. restartAfterIdle shrinks the
// window of a sender idle for longer than its RTO (restart.go).
func NewWindow(rtt time.Duration, initial int, restartAfterIdle bool) Window {
	iw := int64(initial)
	if iw == 0 {
		iw = DefaultInitialWindow
	}
	iw *= MSS
	return Window{
		on:      initial >= 0,
		restart: restartAfterIdle,
		rtt:     rtt,
		rto:     RTO(rtt),
		iw:      iw,
		cwnd:    iw,
	}
}

// On reports whether slow start is modelled: otherwise Depart leaves every chunk whole
// at the instant it is ready.
func (s *Window) On() bool { return s.on }

// Cwnd is the congestion window in bytes.
func (s *Window) Cwnd() int64 { return s.cwnd }

// Rounds counts the rounds begun.
func (s *Window) Rounds() int64 { return s.rounds }

// endRound closes the current round: the acknowledged bytes grow the window if the
// round was window-limited (used at least half of it).
func (s *Window) endRound() {
	if s.sent*2 >= s.cwnd {
		s.cwnd = min(s.cwnd+s.sent, maxCwnd)
	}
	s.active = false
}

// newRound begins a round at t.
func (s *Window) newRound(t time.Time) {
	s.active, s.start, s.left, s.sent = true, t, s.cwnd, 0
	s.rounds++
}

// Piece is part of a chunk and an instant: when its last byte left the sender (Depart),
// or, once the later stages have timed it, when it is released (Path.Data).
type Piece struct {
	N  int
	At time.Time
}

// Depart splits n bytes ready at t into pieces by the round each leaves in, appends
// them to out with the departure of their last byte, and returns out.
func (s *Window) Depart(t time.Time, n int, out []Piece) []Piece {
	if !s.on {
		s.lastDep = t
		return append(out, Piece{N: n, At: t})
	}
	s.idle(t)
	for n > 0 {
		if s.active && t.Before(s.start) {
			// The round these bytes join leaves later than they are ready.
			t = s.start
		}
		switch {
		case !s.active:
			s.newRound(t)
		case !t.Before(s.start.Add(s.rtt)):
			// The round's ACKs are back before these bytes were ready.
			s.endRound()
			s.newRound(t)
		case s.left == 0:
			// The window is full: the next round leaves when the first ACK of
			// this one is back.
			next := s.start.Add(s.rtt)
			s.endRound()
			s.newRound(next)
			t = next
		}
		k := min(int64(n), s.left)
		s.left -= k
		s.sent += k
		n -= int(k)
		if k > 0 {
			out = append(out, Piece{N: int(k), At: t})
			s.lastDep = t
		}
	}
	return out
}
