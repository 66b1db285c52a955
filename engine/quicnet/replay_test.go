package quicnet

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestHasZeroRTT(t *testing.T) {
	initV1, zeroV1, hsV1 := longPacket(0, quicV1, 30), longPacket(1, quicV1, 30), longPacket(2, quicV1, 30)
	initV2, zeroV2 := longPacket(1, quicV2, 30), longPacket(2, quicV2, 30)
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"a v1 Initial", initV1, false},
		{"a v1 0-RTT", zeroV1, true},
		{"a v1 Initial coalesced with 0-RTT", cat(initV1, zeroV1), true},
		{"a v1 Initial and Handshake", cat(initV1, hsV1), false},
		{"a v1 Initial then a short header", cat(initV1, shortPacket(20)), false},
		{"a v2 Initial (type bits of v1's 0-RTT)", initV2, false},
		{"a v2 Initial coalesced with 0-RTT", cat(initV2, zeroV2), true},
		{"a short header", shortPacket(20), false},
		{"version negotiation", longPacket(1, 0, 4), false},
		{"a truncated Initial before a 0-RTT", cat(initV1[:20]), false},
		{"a length past the end", cat(initV1[:len(initV1)-1]), false},
		{"empty", nil, false},
	} {
		if got := hasZeroRTT(c.b); got != c.want {
			t.Errorf("%s: hasZeroRTT = %v", c.name, got)
		}
	}
}

// The replay sends again every datagram of the first flight up to the last with 0-RTT,
// from a new address, ReplayFirstFlight after the first 0-RTT datagram; what the server
// answers it never reaches the client.
func TestReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, Config{RTT: 20 * ms, ReplayFirstFlight: 50 * ms})
		srv := g.sink(g.srv, echo)
		cli := g.sink(g.cli, nil)
		flight := [][]byte{
			cat(longPacket(0, quicV1, 40), longPacket(1, quicV1, 100)), // Initial + 0-RTT
			longPacket(1, quicV1, 200),                                 // 0-RTT
			longPacket(2, quicV1, 50),                                  // Handshake: after the last 0-RTT
			shortPacket(60),                                            // 1-RTT
			longPacket(1, quicV1, 300),                                 // after a short header: not the first flight
		}
		time.Sleep(10 * ms)
		for _, b := range flight {
			g.sendFrom(g.cli, b)
			time.Sleep(ms)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := srv.all()
		if len(got) != 7 {
			t.Fatalf("the server got %d datagrams, want 5 and 2 replayed", len(got))
		}
		for i, a := range got[:5] {
			if a.at != time.Duration(20+i)*ms || a.data != string(flight[i]) || a.from != got[0].from {
				t.Errorf("datagram %d arrived at %v from %s", i, a.at, a.from)
			}
		}
		for i, a := range got[5:] {
			if a.at != 70*ms || a.data != string(flight[i]) || a.from == got[0].from {
				t.Errorf("replay %d arrived at %v from %s (the client's flow is %s), want at 70ms from elsewhere", i, a.at, a.from, got[0].from)
			}
		}
		if c := cli.all(); len(c) != 5 {
			t.Errorf("the client got %d answers, want its own 5", len(c))
		}
		st := g.r.Stats()
		if st.Replays != 1 || st.ReplayAnswers != 2 || st.Flows != 1 || st.DatagramsUp != 5 || st.DatagramsDown != 5 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestNoReplayWithout0RTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, Config{RTT: 20 * ms, ReplayFirstFlight: 50 * ms})
		srv := g.sink(g.srv, nil)
		g.sendFrom(g.cli, longPacket(0, quicV1, 1100))
		g.sendFrom(g.cli, longPacket(2, quicV1, 100))
		time.Sleep(time.Second)
		synctest.Wait()
		if got := srv.all(); len(got) != 2 || g.r.Stats().Replays != 0 {
			t.Errorf("the server got %d datagrams, stats %+v: a flight without 0-RTT was replayed", len(got), g.r.Stats())
		}
	})
}
