package netsim

import (
	"sync"
	"time"
)

// The TCP sending model: slow start, its restart after idle, and a bandwidth limit.
//
// Each direction of a link models the sender that feeds it (the server for the
// download, the client for the upload). A chunk the proxy reads is "written by the
// sender" at its receive stamp; the model decides when each of its bytes leaves the
// sender (its departure), and the chunk is released RTT/2 after its last byte left.
//
//   - Slow start (RFC 5681 section 3.1, Linux's tcp_slow_start): the sender has a
//     congestion window of InitialWindow segments of MSS (1,448) bytes (RFC 6928's
//     IW10, Linux's TCP_INIT_CWND). The bytes of one window leave together in one
//     round; the next round leaves one RTT after the round began (when the ACK of its
//     first segment is back), with the window grown by the bytes acknowledged, so a
//     sender that keeps the window full doubles it every round trip. As in Linux's
//     tcp_is_cwnd_limited during slow start, the window grows only after a round that
//     used at least half of it: an application-limited sender does not inflate it.
//   - Restart after idle (Linux net.ipv4.tcp_slow_start_after_idle=1, the default,
//     tcp_cwnd_restart in net/ipv4/tcp_output.c; RFC 5681 section 4.1 and RFC 2861):
//     when the sender starts again after more than one RTO without sending, the
//     window is halved once per RTO of idle time, but never below
//     min(InitialWindow, window). SlowStartAfterIdle false keeps the window.
//   - The RTO is Linux's after its first RTT sample (tcp_rtt_estimator: srtt = m,
//     mdev = 2m "make sure rto = 3*rtt", rttvar = max(mdev, TCP_RTO_MIN 200 ms)):
//     RTO = RTT + max(2 RTT, 200 ms). A long-lived connection with a steady RTT
//     converges to RTT + 200 ms; for 50 ms the two agree (250 ms), for 150 ms they
//     are 450 ms and 350 ms.
//   - Bandwidth: bytes leave no faster than Bandwidth bits per second, one after
//     another, per link and direction, or per proxy and direction when shared. A
//     byte that finds the link busy waits (the queueing delay); its chunk is released
//     RTT/2 after its last byte was serialized.
//
// Left out: loss and retransmission (so no fast recovery and no RTO backoff), the
// congestion avoidance phase after ssthresh (the window keeps doubling; only a
// bandwidth limit caps the rate), the receiver's advertised window (the proxy's own
// 4 MiB in-flight cap per direction stays), delayed ACKs, pacing, and ACK-clock
// spreading inside a round (a round's bytes leave at once unless bandwidth limits
// them). The handshake is modelled as before: the SYN exchange costs one RTT and the
// window starts with the connection.

// MSS is the segment size of the model: 1,500-byte Ethernet MTU less IPv4, TCP and
// TCP timestamp option headers, what Linux uses on such a path.
const MSS = 1448

// DefaultInitialWindow is the initial congestion window in segments (RFC 6928, Linux
// since 2.6.39).
const DefaultInitialWindow = 10

// rtoMin is Linux's TCP_RTO_MIN.
const rtoMin = 200 * time.Millisecond

// RTO returns the retransmission timeout the model uses for a round-trip time.
func RTO(rtt time.Duration) time.Duration {
	return rtt + max(2*rtt, rtoMin)
}

// maxCwnd keeps the window's arithmetic bounded; far beyond any transfer kalab makes.
const maxCwnd = 1 << 40

// pacer is a serial link of a given rate: busy is when it can take the next byte.
type pacer struct {
	mu   sync.Mutex
	bps  int64
	busy time.Time
}

// send serializes n bytes that are ready at t and returns when the last one left.
func (p *pacer) send(t time.Time, n int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := t
	if p.busy.After(start) {
		start = p.busy
	}
	p.busy = start.Add(time.Duration(int64(n) * 8 * int64(time.Second) / p.bps))
	return p.busy
}

// sender is the congestion state of one direction. Only the direction's reader
// goroutine uses it.
type sender struct {
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
	rounds   int64     // rounds begun, for tests and metrics
}

func newSender(cfg *Config) sender {
	iw := int64(cfg.InitialWindow)
	if iw == 0 {
		iw = DefaultInitialWindow
	}
	iw *= MSS
	return sender{
		on:      cfg.InitialWindow >= 0,
		restart: !cfg.NoSlowStartAfterIdle,
		rtt:     cfg.RTT,
		rto:     RTO(cfg.RTT),
		iw:      iw,
		cwnd:    iw,
	}
}

// endRound closes the current round: the acknowledged bytes grow the window if the
// round was window-limited (used at least half of it).
func (s *sender) endRound() {
	if s.sent*2 >= s.cwnd {
		s.cwnd = min(s.cwnd+s.sent, maxCwnd)
	}
	s.active = false
}

// newRound begins a round at t.
func (s *sender) newRound(t time.Time) {
	s.active, s.start, s.left, s.sent = true, t, s.cwnd, 0
	s.rounds++
}

// idle applies the restart after idle for data ready at t.
func (s *sender) idle(t time.Time) {
	if !s.restart || s.lastDep.IsZero() {
		return
	}
	delta := t.Sub(s.lastDep)
	if delta <= s.rto {
		return
	}
	if s.active {
		s.endRound()
	}
	// tcp_cwnd_restart: halve per RTO of idle, not below min(IW, cwnd).
	restart := min(s.iw, s.cwnd)
	cwnd := s.cwnd
	for delta -= s.rto; delta > 0 && cwnd > restart; delta -= s.rto {
		cwnd >>= 1
	}
	s.cwnd = max(cwnd, restart)
}

// piece is part of a chunk and the time its last byte left the sender.
type piece struct {
	n   int
	dep time.Time
}

// depart splits n bytes ready at t into pieces by round and returns them.
func (s *sender) depart(t time.Time, n int, out []piece) []piece {
	if !s.on {
		s.lastDep = t
		return append(out, piece{n: n, dep: t})
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
		k := int(min(int64(n), s.left))
		s.left -= k64(k)
		s.sent += k64(k)
		n -= k
		if k > 0 {
			out = append(out, piece{n: k, dep: t})
			s.lastDep = t
		}
	}
	return out
}

func k64(k int) int64 { return int64(k) }
