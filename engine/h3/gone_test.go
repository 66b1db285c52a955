package h3

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// fails sends one request and checks that it failed with class after exactly latency.
func fails(t *testing.T, c *Client, seq int, class client.ErrorClass, latency time.Duration) client.Event {
	t.Helper()
	ev := c.Do(context.Background(), seq)
	if ev.Class != class || ev.Latency != latency || ev.Status != 0 {
		t.Errorf("request %d: class %q latency %v status %d (%s), want %q %v 0", seq, ev.Class, ev.Latency, ev.Status, ev.Error, class, latency)
	}
	return ev
}

// A server that is gone: every way the client can meet it ends in a class, not a hang,
// and the bubble ending proves no goroutine of either side is left.
func TestServerGone(t *testing.T) {
	t.Run("stopped between requests", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLab(t, ServerConfig{})
			c := l.client(ClientConfig{})
			do(t, c, 0, 2*rtt)
			l.stop() // CONNECTION_CLOSE: the client's connection ends 50 ms later
			time.Sleep(rtt)
			// The new connection's Initial reaches nobody: the handshake gives up after
			// quic-go's HandshakeIdleTimeout, 5 s without a packet.
			ev := fails(t, c, 1, client.ClassTimeout, 5*time.Second)
			if ev.ConnID != 0 || ev.Attempts != 1 {
				t.Errorf("conn %d attempts %d, want 0 1 (no connection came up)", ev.ConnID, ev.Attempts)
			}
			if st := c.Stats(); st.Connections != 1 {
				t.Errorf("connections %d, want 1", st.Connections)
			}
		})
	})
	t.Run("stopped mid-request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLab(t, ServerConfig{Delay: time.Second})
			c := l.client(ClientConfig{})
			go func() {
				time.Sleep(500 * time.Millisecond)
				l.stop()
			}()
			// The server's CONNECTION_CLOSE (H3_NO_ERROR) arrives 50 ms after the stop.
			fails(t, c, 0, client.ClassReset, 550*time.Millisecond)
		})
	})
	t.Run("unreachable mid-connection", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLab(t, ServerConfig{IdleTimeout: 10 * time.Second})
			c := l.client(ClientConfig{})
			do(t, c, 0, 2*rtt)
			time.Sleep(time.Second) // the packets of the first exchange (ACKs) are all in
			l.net.unplug(l.pc.LocalAddr())
			// Nothing comes back: the client's idle timer, started by the request (its
			// first ack-eliciting packet after the quiet), ends the connection 10 s later.
			fails(t, c, 1, client.ClassTimeout, 10*time.Second)
			if q := c.QUIC(); q.IdleTimeouts != 1 {
				t.Errorf("client idle timeouts %d, want 1", q.IdleTimeouts)
			}
		})
	})
}

// quic-go takes a peer's max_idle_timeout as at least 5 s (internal/wire/
// transport_parameters.go, MinRemoteIdleTimeout): a server that closes after 2 s leaves a
// quic-go client believing in the connection for 5 s. A request in between finds the
// server silent, and fails when the client's idle timer fires, unless the server answers
// the unknown connection with a stateless reset; the retry then succeeds on a new one.
func TestStaleConnection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reset    bool
		class    client.ErrorClass
		latency  time.Duration
		attempts int
	}{
		{"silent", false, client.ClassTimeout, 5 * time.Second, 1},
		{"stateless reset", true, client.ClassNone, rtt + 2*rtt, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLab(t, ServerConfig{IdleTimeout: 2 * time.Second, StatelessReset: tc.reset})
				c := l.client(ClientConfig{Retry: client.RetryPolicy{Attempts: 1, On: []client.ErrorClass{client.ClassReset}}})
				do(t, c, 0, 2*rtt)
				time.Sleep(3 * time.Second)
				ev := c.Do(context.Background(), 1)
				if ev.Class != tc.class || ev.Latency != tc.latency || ev.Attempts != tc.attempts {
					t.Errorf("class %q latency %v attempts %d (%s), want %q %v %d", ev.Class, ev.Latency, ev.Attempts, ev.Error, tc.class, tc.latency, tc.attempts)
				}
				if st := l.srv.Stats(); st.IdleTimeouts != 1 {
					t.Errorf("server idle timeouts %d, want 1", st.IdleTimeouts)
				}
			})
		})
	}
}
