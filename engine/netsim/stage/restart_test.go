package stage

import (
	"testing"
	"time"
)

func TestRTO(t *testing.T) {
	for _, c := range []struct{ rtt, want time.Duration }{
		{0, 200 * time.Millisecond},
		{10 * time.Millisecond, 210 * time.Millisecond},
		{50 * time.Millisecond, 250 * time.Millisecond}, // RTT + TCP_RTO_MIN = 3 RTT
		{100 * time.Millisecond, 300 * time.Millisecond},
		{150 * time.Millisecond, 450 * time.Millisecond},
	} {
		if got := RTO(c.rtt); got != c.want {
			t.Errorf("RTO(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}

// TestRestartAfterIdle pins the window a sender restarts with after an idle pause:
// halved once per RTO of idle past the first, never below the initial window, and kept
// whole when the pause is not longer than one RTO or the restart is off.
func TestRestartAfterIdle(t *testing.T) {
	const rtt = 50 * time.Millisecond
	rto := RTO(rtt) // 250 ms
	for _, c := range []struct {
		idle    time.Duration
		restart bool
		want    int64
	}{
		{rto, true, 8 * iw},
		{rto + 1, true, 4 * iw},
		{2 * rto, true, 4 * iw},
		{2*rto + 1, true, 2 * iw},
		{3*rto + 1, true, iw},
		{10 * rto, true, iw},
		{10 * rto, false, 8 * iw},
	} {
		s := NewWindow(rtt, 0, c.restart)
		// Rounds of IW, 2 IW and 4 IW: the window reaches 8 IW when the last one's
		// ACKs come back. Its bytes left at 2 RTT.
		s.Depart(t0, 7*iw, nil)
		resume := at(2*rtt + c.idle)
		got := s.Depart(resume, 16*iw, nil)
		if first := got[0]; first.N != int(c.want) || !first.At.Equal(resume) {
			t.Errorf("idle %v (restart %v): first round %d bytes at +%v, want %d at +%v",
				c.idle, c.restart, first.N, first.At.Sub(t0), c.want, resume.Sub(t0))
		}
	}
}
