package h3

import (
	"testing"
	"testing/synctest"
	"time"
)

// A new connection costs one round trip for the handshake and one for the request; a
// reused one only the request's.
func TestFirstAndReusedLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, ServerConfig{})
		c := l.client(ClientConfig{})
		first := do(t, c, 0, 2*rtt)
		second := do(t, c, 1, rtt)
		if first.Connect != rtt || first.Reused || first.ConnID != 1 || first.ServerConn != 1 || first.FirstByte != 2*rtt {
			t.Errorf("first: connect %v reused %v conn %d server conn %d first byte %v, want %v false 1 1 %v",
				first.Connect, first.Reused, first.ConnID, first.ServerConn, first.FirstByte, rtt, 2*rtt)
		}
		if second.Connect != 0 || !second.Reused || second.ConnID != 1 || second.ServerConn != 1 {
			t.Errorf("second: connect %v reused %v conn %d server conn %d, want 0 true 1 1",
				second.Connect, second.Reused, second.ConnID, second.ServerConn)
		}
		c.Close()
		time.Sleep(rtt) // the CONNECTION_CLOSE reaches the server
		l.stop()
		if st := c.Stats(); st.Connections != 1 || st.TLSHandshakes != 1 || st.TLSResumed != 0 {
			t.Errorf("client stats %+v", st)
		}
		if st := l.srv.Stats(); st.Connections != 1 || st.Requests != 2 || len(st.Conns) != 1 || st.Conns[0].How != CloseByClient ||
			st.TLSHandshakes != 1 || st.TLSResumed != 0 {
			t.Errorf("server stats %+v", st)
		}
	})
}

// zeroRTTCase is one resumed connection: the first connection brings the session ticket,
// the server's 5 s idle timeout ends it during a 6 s pause, and the request after the
// pause goes on a new, resumed connection.
type zeroRTTCase struct {
	name     string
	mode     string // ClientConfig.ZeroRTT
	method   string
	body     int
	serverOK bool // the server accepts 0-RTT
	want     time.Duration
	attempted, accepted, rejected,
	serverAccepted, serverEarly int64
}

func TestZeroRTT(t *testing.T) {
	for _, tc := range []zeroRTTCase{
		// A GET in 0-RTT is answered one round trip after it left: no wait for the handshake.
		{name: "safe GET", mode: ZeroRTTSafe, method: "GET", serverOK: true, want: rtt,
			attempted: 1, accepted: 1, serverAccepted: 1, serverEarly: 1},
		// "off" resumes the session but waits for the handshake: two round trips.
		{name: "off GET", mode: ZeroRTTOff, method: "GET", serverOK: true, want: 2 * rtt},
		// A POST is not safe: it waits for the handshake. The connection still sent its
		// SETTINGS in 0-RTT, so the server accepted 0-RTT data, but no request.
		{name: "safe POST", mode: ZeroRTTSafe, method: "POST", body: 1000, serverOK: true, want: 2 * rtt,
			serverAccepted: 1},
		// "all" sends the POST, body included, in 0-RTT: the server handles a request it
		// cannot tell from a replay.
		{name: "all POST", mode: ZeroRTTAll, method: "POST", body: 1000, serverOK: true, want: rtt,
			attempted: 1, accepted: 1, serverAccepted: 1, serverEarly: 1},
	} {
		t.Run(tc.name, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { zeroRTT(t, tc) }) })
	}
}

func zeroRTT(t *testing.T, tc zeroRTTCase) {
	l := newLab(t, ServerConfig{IdleTimeout: 5 * time.Second, ZeroRTT: tc.serverOK})
	c := l.client(ClientConfig{ZeroRTT: tc.mode, SessionResumption: true, Method: tc.method, BodyBytes: tc.body})
	do(t, c, 0, 2*rtt)
	time.Sleep(6 * time.Second)
	ev := do(t, c, 1, tc.want)
	if ev.ConnID != 2 || ev.ServerConn != 2 || ev.Reused || ev.Attempts != 1 {
		t.Errorf("conn %d server conn %d reused %v attempts %d, want 2 2 false 1", ev.ConnID, ev.ServerConn, ev.Reused, ev.Attempts)
	}
	q := c.QUIC()
	if q.ZeroRTTAttempted != tc.attempted || q.ZeroRTTAccepted != tc.accepted || q.ZeroRTTRejected != tc.rejected {
		t.Errorf("client 0-RTT attempted %d accepted %d rejected %d, want %d %d %d",
			q.ZeroRTTAttempted, q.ZeroRTTAccepted, q.ZeroRTTRejected, tc.attempted, tc.accepted, tc.rejected)
	}
	if st := c.Stats(); st.Connections != 2 || st.TLSResumed != 1 {
		t.Errorf("client connections %d resumed %d, want 2 1", st.Connections, st.TLSResumed)
	}
	st := l.srv.Stats()
	if st.ZeroRTTAccepted != tc.serverAccepted || st.ZeroRTTRequests != tc.serverEarly || st.Requests != 2 {
		t.Errorf("server 0-RTT accepted %d requests %d of %d, want %d %d of 2", st.ZeroRTTAccepted, st.ZeroRTTRequests, st.Requests, tc.serverAccepted, tc.serverEarly)
	}
	c.Close()
	time.Sleep(rtt) // the 0-RTT GET was answered before the client's Finished reached the server
	l.stop()
	if st := l.srv.Stats(); st.TLSHandshakes != 2 || st.TLSResumed != 1 {
		t.Errorf("server handshakes %d resumed %d, want 2 1 (the second connection resumed)", st.TLSHandshakes, st.TLSResumed)
	}
}

// A server that does not take 0-RTT (here: a new one at the same address, which cannot
// read the old one's ticket) rejects the early GET; the client sends it again once the
// handshake completed, on the same connection, and it succeeds in two round trips.
func TestZeroRTTRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, ServerConfig{ZeroRTT: true})
		c := l.client(ClientConfig{ZeroRTT: ZeroRTTSafe, SessionResumption: true})
		do(t, c, 0, 2*rtt)
		l.stop() // its CONNECTION_CLOSE ends the client's connection
		time.Sleep(rtt)
		l.start(ServerConfig{ZeroRTT: false})
		ev := do(t, c, 1, 2*rtt)
		if ev.ConnID != 2 || ev.Attempts != 1 || ev.ServerConn != 1 {
			t.Errorf("conn %d attempts %d server conn %d, want 2 1 1", ev.ConnID, ev.Attempts, ev.ServerConn)
		}
		q := c.QUIC()
		if q.ZeroRTTAttempted != 1 || q.ZeroRTTAccepted != 0 || q.ZeroRTTRejected != 1 {
			t.Errorf("client 0-RTT attempted %d accepted %d rejected %d, want 1 0 1", q.ZeroRTTAttempted, q.ZeroRTTAccepted, q.ZeroRTTRejected)
		}
		if st := l.srv.Stats(); st.ZeroRTTAccepted != 0 || st.ZeroRTTRequests != 0 || st.Requests != 1 || st.TLSHandshakes != 1 || st.TLSResumed != 0 {
			t.Errorf("server 0-RTT accepted %d early requests %d requests %d handshakes %d resumed %d, want 0 0 1 1 0 (the old server's ticket is not the new one's)",
				st.ZeroRTTAccepted, st.ZeroRTTRequests, st.Requests, st.TLSHandshakes, st.TLSResumed)
		}
		do(t, c, 2, rtt) // the connection works on
		c.Close()
		l.stop()
	})
}

// The server counts the handshakes that resumed a session itself (its TLS state's
// DidResume), for a client that cannot say: three connections, one per pause past the 5 s
// idle timeout, resume the first one's session when the client keeps a session cache (2 of
// 3) and none when it keeps none.
func TestServerCountsResumption(t *testing.T) {
	for _, keep := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			l := newLab(t, ServerConfig{IdleTimeout: 5 * time.Second})
			c := l.client(ClientConfig{SessionResumption: keep})
			for seq := range 3 {
				if seq > 0 {
					time.Sleep(6 * time.Second)
				}
				do(t, c, seq, 2*rtt)
			}
			c.Close()
			time.Sleep(rtt)
			l.stop()
			want := int64(0)
			if keep {
				want = 2
			}
			st := l.srv.Stats()
			if st.Connections != 3 || st.TLSHandshakes != 3 || st.TLSResumed != want {
				t.Errorf("session cache %v: server connections %d handshakes %d resumed %d, want 3 3 %d", keep, st.Connections, st.TLSHandshakes, st.TLSResumed, want)
			}
			if cs := c.Stats(); cs.TLSResumed != st.TLSResumed {
				t.Errorf("session cache %v: the client counts %d resumed, the server %d", keep, cs.TLSResumed, st.TLSResumed)
			}
		})
	}
}
