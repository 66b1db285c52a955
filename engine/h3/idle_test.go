package h3

import (
	"testing"
	"testing/synctest"
	"time"
)

// The connection's idle timeout is the smaller of what the two ends announce (RFC 9000
// 10.1): with 15 s pauses, a 10 s timeout on either side ends the connection in every
// pause, and each end's own timer closes it (QUIC closes an idle connection silently), so
// both count it; 20 s on both sides keeps it.
func TestNegotiatedIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		name           string
		client, server time.Duration
		conns          []uint64      // the connection of each request
		idle           int64         // idle closes, on each side
		after          time.Duration // the connection's idle timeout: the server's closes come that long after the last packet it heard
	}{
		{"server 10s", 30 * time.Second, 10 * time.Second, []uint64{1, 2, 3}, 2, 10 * time.Second},
		{"server 20s", 30 * time.Second, 20 * time.Second, []uint64{1, 1, 1}, 0, 0},
		{"client 10s", 10 * time.Second, 20 * time.Second, []uint64{1, 2, 3}, 2, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLab(t, ServerConfig{IdleTimeout: tc.server})
				c := l.client(ClientConfig{IdleTimeout: tc.client, SessionResumption: true})
				for i, want := range tc.conns {
					if i > 0 {
						time.Sleep(15 * time.Second)
					}
					lat := rtt
					if i == 0 || want != tc.conns[i-1] {
						lat = 2 * rtt // a new connection: the handshake first
					}
					ev := do(t, c, i, lat)
					if ev.ConnID != want || ev.ServerConn != want {
						t.Errorf("request %d: conn %d server conn %d, want %d", i, ev.ConnID, ev.ServerConn, want)
					}
				}
				if got := c.QUIC().IdleTimeouts; got != tc.idle {
					t.Errorf("client idle timeouts %d, want %d", got, tc.idle)
				}
				st := l.srv.Stats()
				if st.IdleTimeouts != tc.idle {
					t.Errorf("server idle timeouts %d, want %d", st.IdleTimeouts, tc.idle)
				}
				for _, r := range st.Conns {
					closed := r.ID < uint64(len(st.Conns)) // all but the last one
					if closed != (r.How == CloseIdleTimeout) || closed && r.Closed.Sub(r.Heard) != tc.after {
						t.Errorf("server conn %d: %q %v after the last packet it heard, want idle close after %v: %v", r.ID, r.How, r.Closed.Sub(r.Heard), tc.after, closed)
					}
				}
			})
		})
	}
}

// maxAckDelay is how long quic-go holds the ACK of a lone ack-eliciting packet
// (internal/ackhandler/received_packet_tracker.go: MaxAckDelay, packetsBeforeAck = 2).
const maxAckDelay = 25 * time.Millisecond

// predictPings says how many keep-alive PINGs the client sends between last, the last
// packet it received, and until, from quic-go's rule (connection.go): applyTransportParameters
// sets keepAliveInterval = min(KeepAlivePeriod, idle timeout / 2); nextKeepAliveTime is
// lastPacketReceivedTime + max(keepAliveInterval, 1.5 PTO), and only one PING is in flight
// (keepAlivePingSent, cleared by the next packet received). The server acknowledges a
// lone PING after its max_ack_delay, so each PING after the first goes one interval after
// the previous one's ACK arrived: interval + RTT + 25 ms later.
func predictPings(last, until, period, idle time.Duration) int64 {
	interval := min(period, idle/2)
	var n int64
	for at := last + interval; at < until; at += interval + rtt + maxAckDelay {
		n++
	}
	return n
}

// Keep-alive PINGs keep a connection through a pause longer than its idle timeout, and
// there are exactly as many as quic-go's rule predicts. The second request is at 24.7 s;
// the last packet the client heard before the pause came at 0.3 s: the server's
// MAX_STREAMS, sent when the client's ACK of the response freed the stream. Goroutines of
// one instant interleave differently from run to run, which can move that packet by
// 25 ms (an ACK sent alone or with other frames); the pause is chosen so that no PING is
// within 0.1 s of the second request either way.
func TestKeepAlivePings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		period time.Duration
		pings  int64
	}{
		{"5s", 5 * time.Second, 4},   // PINGs at 5.3, 10.425, 15.55 and 20.675 s
		{"20s", 20 * time.Second, 4}, // capped at half the 10 s idle timeout: the same 5 s
		{"3s", 3 * time.Second, 7},   // 3.3, 6.425 ... 22.05 s; the next would go at 25.175 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := predictPings(300*time.Millisecond, 24700*time.Millisecond, tc.period, 10*time.Second); got != tc.pings {
				t.Fatalf("the rule predicts %d PINGs, the table says %d", got, tc.pings)
			}
			synctest.Test(t, func(t *testing.T) {
				l := newLab(t, ServerConfig{IdleTimeout: 10 * time.Second})
				c := l.client(ClientConfig{IdleTimeout: 30 * time.Second, KeepAlivePeriod: tc.period})
				do(t, c, 0, 2*rtt)
				time.Sleep(24500 * time.Millisecond)
				if ev := do(t, c, 1, rtt); !ev.Reused || ev.ConnID != 1 {
					t.Errorf("after the pause: reused %v conn %d, want true 1", ev.Reused, ev.ConnID)
				}
				q, st := c.QUIC(), l.srv.Stats()
				if q.PingsSent != tc.pings || q.IdleTimeouts != 0 {
					t.Errorf("client PINGs %d idle timeouts %d, want %d 0", q.PingsSent, q.IdleTimeouts, tc.pings)
				}
				if st.PingsSent != 0 || st.IdleTimeouts != 0 || st.Connections != 1 {
					t.Errorf("server PINGs %d idle timeouts %d connections %d, want 0 0 1", st.PingsSent, st.IdleTimeouts, st.Connections)
				}
			})
		})
	}
}
