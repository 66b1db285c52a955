package stage

import "time"

// Restart after idle (Linux net.ipv4.tcp_slow_start_after_idle=1, the default,
// tcp_cwnd_restart in net/ipv4/tcp_output.c; RFC 5681 section 4.1 and RFC 2861): when
// the sender starts again after more than one RTO without sending, the window is halved
// once per RTO of idle time, but never below min(InitialWindow, window). A window made
// without restartAfterIdle (a host with tcp_slow_start_after_idle=0) keeps its size.
//
// The RTO is Linux's after its first RTT sample (tcp_rtt_estimator: srtt = m, mdev = 2m
// "make sure rto = 3*rtt", rttvar = max(mdev, TCP_RTO_MIN 200 ms)): RTO = RTT +
// max(2 RTT, 200 ms). A long-lived connection with a steady RTT converges to RTT +
// 200 ms; for 50 ms the two agree (250 ms), for 150 ms they are 450 ms and 350 ms.

// rtoMin is Linux's TCP_RTO_MIN.
const rtoMin = 200 * time.Millisecond

// RTO returns the retransmission timeout the model uses for a round-trip time.
func RTO(rtt time.Duration) time.Duration {
	return rtt + max(2*rtt, rtoMin)
}

// idle applies the restart after idle for data ready at t.
func (s *Window) idle(t time.Time) {
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
