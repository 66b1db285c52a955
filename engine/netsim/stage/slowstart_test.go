package stage

import (
	"testing"
	"time"
)

// windowRounds counts the slow-start rounds that carry n bytes from a window of w
// bytes that doubles each round: the plan's arithmetic, independent of the model.
func windowRounds(n, w int) int {
	r := 0
	for n > 0 {
		n -= w
		w *= 2
		r++
	}
	return r
}

func TestWindowArithmetic(t *testing.T) {
	// 1 MiB from IW10: 14,480 x (1+2+...+64) = 1,838,960 >= 1,048,576 > 14,480 x 63.
	if got := windowRounds(1<<20, iw); got != 7 {
		t.Fatalf("windowRounds(1 MiB) = %d, want 7", got)
	}
	const rtt = 50 * time.Millisecond
	s := NewWindow(rtt, 0, true)
	ps := s.Depart(t0, 1<<20, nil)
	var total int
	for _, p := range ps {
		total += p.N
	}
	last := ps[len(ps)-1].At.Sub(t0)
	if total != 1<<20 || last != 6*rtt || s.Rounds() != 7 {
		t.Fatalf("1 MiB: %d bytes, last leaves at %v in %d rounds; want %d, %v, 7", total, last, s.Rounds(), 1<<20, 6*rtt)
	}
	// Round 7 used 136,336 of 926,720 bytes, under half: no growth. The window is 64 IW.
	s.Depart(t0.Add(6*rtt+rtt), 1, nil) // ends round 7 (ACKs back), starts one
	if s.Cwnd() != 64*iw {
		t.Fatalf("cwnd after 1 MiB = %d, want %d", s.Cwnd(), 64*iw)
	}
}

// TestSlowStartRounds pins the departures of the window stage: a round's bytes leave
// together, the next round one RTT after the one before began, with the window grown by
// what was acknowledged; a round that used less than half the window does not grow it;
// bytes ready before their round leave with it.
func TestSlowStartRounds(t *testing.T) {
	const rtt = 100 * time.Millisecond
	t.Run("window-limited doubles", func(t *testing.T) {
		s := NewWindow(rtt, 0, true)
		got := s.Depart(t0, 3*iw+100, nil)
		wantPieces(t, "3 IW + 100 bytes", got, []Piece{{iw, t0}, {2 * iw, at(rtt)}, {100, at(2 * rtt)}})
		if s.Cwnd() != 4*iw || s.Rounds() != 3 {
			t.Errorf("cwnd %d in %d rounds, want %d in 3", s.Cwnd(), s.Rounds(), 4*iw)
		}
	})
	t.Run("application-limited keeps the window", func(t *testing.T) {
		s := NewWindow(rtt, 0, true)
		a := s.Depart(t0, 1000, nil)
		b := s.Depart(at(rtt), 1000, nil) // the first round's ACKs are back
		wantPieces(t, "two small writes an RTT apart", append(a, b...), []Piece{{1000, t0}, {1000, at(rtt)}})
		if s.Cwnd() != iw {
			t.Errorf("cwnd %d after rounds of 1000 bytes, want %d", s.Cwnd(), iw)
		}
	})
	t.Run("bytes join a later round", func(t *testing.T) {
		s := NewWindow(rtt, 0, true)
		s.Depart(t0, 2*iw, nil) // IW now, IW at 1 RTT, which has IW left
		got := s.Depart(at(time.Millisecond), 10, nil)
		wantPieces(t, "10 bytes ready at 1 ms", got, []Piece{{10, at(rtt)}})
	})
	t.Run("initial window", func(t *testing.T) {
		s := NewWindow(rtt, 4, true)
		got := s.Depart(t0, 4*MSS+1, nil)
		wantPieces(t, "IW4 + 1 byte", got, []Piece{{4 * MSS, t0}, {1, at(rtt)}})
	})
	t.Run("off", func(t *testing.T) {
		s := NewWindow(rtt, -1, true)
		got := s.Depart(at(time.Second), 1<<20, nil)
		wantPieces(t, "1 MiB without slow start", got, []Piece{{1 << 20, at(time.Second)}})
		if s.On() {
			t.Error("a negative initial window leaves slow start on")
		}
	})
}
