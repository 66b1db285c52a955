package h3

import (
	"context"
	"crypto/x509"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// Requests that arrive together share one dial and one connection: HTTP/3 multiplexes
// them, so each takes the handshake and its own round trip, whichever dialled (small
// responses: 20 of them fit in the first congestion window, so no pacing adds time).
func TestConcurrentRequestsShareOneConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, ServerConfig{BodyBytes: 100})
		c := l.client(ClientConfig{})
		const n = 20
		evs := make([]client.Event, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { evs[i] = c.Do(context.Background(), i) })
		}
		wg.Wait()
		reused := 0
		for i, ev := range evs {
			if !ev.OK() || ev.Latency != 2*rtt || ev.ConnID != 1 || ev.BytesRead != 100 {
				t.Errorf("request %d: class %q latency %v conn %d bytes %d (%s), want ok 200ms 1 100", i, ev.Class, ev.Latency, ev.ConnID, ev.BytesRead, ev.Error)
			}
			if ev.Reused {
				reused++
			}
		}
		if reused != n-1 {
			t.Errorf("%d requests reused the connection, want %d: all but the first on it", reused, n-1)
		}
		if st := c.Stats(); st.Connections != 1 {
			t.Errorf("connections %d, want 1", st.Connections)
		}
		if st := l.srv.Stats(); st.Connections != 1 || st.Requests != n {
			t.Errorf("server connections %d requests %d, want 1 %d", st.Connections, st.Requests, n)
		}
	})
}

// An attempt that runs out of time cancels its stream, not the connection: the next
// request reuses it. The server's handler sees the cancellation and answers nothing.
func TestAttemptTimeoutKeepsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, ServerConfig{Delay: time.Second})
		c := l.client(ClientConfig{Timeout: 500 * time.Millisecond})
		ev := fails(t, c, 0, client.ClassTimeout, 500*time.Millisecond)
		if ev.ConnID != 1 || ev.FirstByte != 0 {
			t.Errorf("conn %d first byte %v, want 1 0", ev.ConnID, ev.FirstByte)
		}
		time.Sleep(time.Second)
		c.cfg.Timeout = 0
		if ev := do(t, c, 1, rtt+time.Second); !ev.Reused || ev.ConnID != 1 {
			t.Errorf("after the timeout: reused %v conn %d, want true 1", ev.Reused, ev.ConnID)
		}
	})
}

// A certificate the client does not trust fails the handshake as "tls", as soon as the
// server's flight arrived.
func TestUntrustedCertificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLab(t, ServerConfig{})
		l.pool = x509.NewCertPool()
		c := l.client(ClientConfig{})
		fails(t, c, 0, client.ClassTLS, rtt)
		if st := c.Stats(); st.Connections != 0 {
			t.Errorf("connections %d, want 0", st.Connections)
		}
	})
}

func TestClientConfigRejected(t *testing.T) {
	ok := ClientConfig{Addr: "10.0.0.1:443", ListenPacket: newMemNet(0).listenAny}
	for name, mod := range map[string]func(*ClientConfig){
		"no addr":          func(c *ClientConfig) { c.Addr = "" },
		"no socket":        func(c *ClientConfig) { c.ListenPacket = nil },
		"0-RTT, no ticket": func(c *ClientConfig) { c.ZeroRTT = ZeroRTTSafe },
		"unknown 0-RTT":    func(c *ClientConfig) { c.ZeroRTT, c.SessionResumption = "some", true },
		"two conns":        func(c *ClientConfig) { c.MaxConns = 2 },
		"hidden retries":   func(c *ClientConfig) { c.Retry.Hidden = true },
		"negative timeout": func(c *ClientConfig) { c.Timeout = -1 },
	} {
		cfg := ok
		mod(&cfg)
		if _, err := NewClient(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewClient(ok); err != nil {
		t.Errorf("a good config: %v", err)
	}
}
