package netsim

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder collects ConnRecords from OnConn.
type recorder struct {
	mu   sync.Mutex
	recs []ConnRecord
}

func (r *recorder) add(c ConnRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, c)
	r.mu.Unlock()
}

func (r *recorder) all() []ConnRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ConnRecord(nil), r.recs...)
}

// TestConnRecords checks who closed first, how, and the idle time the proxy measured on
// its upstream side, against servers whose behaviour each case fixes.
func TestConnRecords(t *testing.T) {
	t.Parallel()
	const (
		rtt  = 100 * time.Millisecond
		idle = 300 * time.Millisecond
	)
	// sleepIdle is the servers' idle wait; how late it ended widens the upper bounds, so a
	// loaded machine does not fail the test (lower bounds never widen).
	var lag atomic.Int64
	sleepIdle := func() {
		t0 := time.Now()
		time.Sleep(idle)
		late := int64(time.Since(t0) - idle)
		for cur := lag.Load(); late > cur && !lag.CompareAndSwap(cur, late); cur = lag.Load() {
		}
	}
	// respond reads one byte and answers one byte, then does what the case says.
	respond := func(then func(c *net.TCPConn)) func(c *net.TCPConn) {
		return func(c *net.TCPConn) {
			b := make([]byte, 1)
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			_, _ = c.Write(b)
			then(c)
		}
	}
	cases := []struct {
		name     string
		server   func(c *net.TCPConn)
		client   func(c *net.TCPConn) // after reading the answer
		by       Side
		reason   Reason
		idleLo   time.Duration
		idleHi   time.Duration
		closeRun bool // the proxy is closed while the link is open
		goodbye  int  // bytes the server sends just before its FIN
	}{
		{name: "server idle close", server: respond(func(c *net.TCPConn) {
			// The idle clock starts when the answer was written, as a server's does.
			sleepIdle()
			_ = c.Close()
		}), by: SideServer, reason: ReasonIdle, idleLo: idle, idleHi: idle + 40*time.Millisecond},
		{name: "idle close with a goodbye", server: respond(func(c *net.TCPConn) {
			// A TLS close_notify just before the FIN does not restart the idle clock.
			sleepIdle()
			_, _ = c.Write(make([]byte, 24))
			_ = c.Close()
		}), by: SideServer, reason: ReasonIdle, idleLo: idle, idleHi: idle + 40*time.Millisecond, goodbye: 24},
		{name: "a goodbye read long before its FIN", server: respond(func(c *net.TCPConn) {
			// A TLS 1.3 close_notify record (type 23, 19 bytes of ciphertext) known by its
			// bytes, however long the FIN takes behind it (a busy machine's reader can see
			// them tens of ms apart): the idle clock still starts at the answer.
			sleepIdle()
			_, _ = c.Write(append([]byte{0x17, 0x03, 0x03, 0x00, 0x13}, make([]byte, 19)...))
			time.Sleep(50 * time.Millisecond)
			_ = c.Close()
		}), by: SideServer, reason: ReasonIdle, idleLo: idle + 50*time.Millisecond, idleHi: idle + 90*time.Millisecond, goodbye: 24},
		{name: "close after response", server: respond(func(c *net.TCPConn) { _ = c.Close() }),
			by: SideServer, reason: ReasonAfterResponse, idleHi: AfterResponseWindow},
		{name: "server reset", server: respond(func(c *net.TCPConn) {
			sleepIdle()
			_ = c.SetLinger(0)
			_ = c.Close()
		}), by: SideServer, reason: ReasonReset, idleLo: idle, idleHi: idle + 40*time.Millisecond},
		{name: "client closes first", server: respond(func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c); _ = c.Close() }),
			client: func(c *net.TCPConn) { _ = c.CloseWrite() },
			by:     SideClient, reason: ReasonIdle, idleLo: rtt / 2, idleHi: rtt/2 + 60*time.Millisecond},
		{name: "open at run end", server: respond(func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c) }),
			by: SideKalab, reason: ReasonRunEnd, closeRun: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			p, err := Start(Config{Upstream: tcpServer(t, tc.server), RTT: rtt, OnConn: rec.add})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c := dial(t, p.Addr())
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			if tc.client != nil {
				tc.client(c)
			}
			if tc.closeRun {
				time.Sleep(rtt)
				_ = p.Close()
			} else {
				_, _ = io.Copy(io.Discard, c) // until the server's close arrives
				_ = c.Close()
			}
			waitFor(t, "record", func() bool { return len(rec.all()) == 1 })
			r := rec.all()[0]
			if r.ID != 1 || r.ClosedBy != tc.by || r.Reason != tc.reason {
				t.Fatalf("record %+v: want id 1, closed by %s, reason %s", r, tc.by, tc.reason)
			}
			if r.BytesUp != 1 || r.BytesDown != 1+int64(tc.goodbye) {
				t.Errorf("bytes up %d down %d, want 1 and 1", r.BytesUp, r.BytesDown)
			}
			if r.Connected <= 0 || r.Closed < r.Connected || r.Ended < r.Closed {
				t.Errorf("times out of order: %+v", r)
			}
			if !tc.closeRun {
				within(t, "idle before the first close", r.Idle, tc.idleLo, tc.idleHi+time.Duration(lag.Load()))
			}
		})
	}
}

// TestConnRecordRefused: an upstream that refuses is recorded as such, with no idle time.
func TestConnRecordRefused(t *testing.T) {
	t.Parallel()
	var rec recorder
	p, err := Start(Config{Upstream: refusingAddr(t), RTT: 20 * time.Millisecond, OnConn: rec.add})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Read(make([]byte, 1))
	waitFor(t, "record", func() bool { return len(rec.all()) == 1 })
	if r := rec.all()[0]; r.ClosedBy != SideServer || r.Reason != ReasonRefused || r.Idle != -1 || r.Connected != 0 {
		t.Errorf("record %+v: want refused by the server, idle -1", r)
	}
}

// TestRemoteUpstreamNeedsOptIn: an upstream outside loopback is refused unless allowed;
// the listener stays on loopback either way.
func TestRemoteUpstreamNeedsOptIn(t *testing.T) {
	t.Parallel()
	if _, err := Start(Config{Upstream: "192.0.2.1:80"}); err == nil {
		t.Fatal("a remote upstream was accepted without AllowRemoteUpstream")
	}
	p, err := Start(Config{Upstream: "192.0.2.1:80", AllowRemoteUpstream: true})
	if err != nil {
		t.Fatalf("with AllowRemoteUpstream: %v", err)
	}
	defer p.Close()
	if host, _, _ := net.SplitHostPort(p.Addr()); host != "127.0.0.1" {
		t.Errorf("listening on %s, want loopback", p.Addr())
	}
	if _, err := Start(Config{Upstream: "192.0.2.1:80", Listen: "0.0.0.0:0", AllowRemoteUpstream: true}); err == nil {
		t.Error("a non-loopback listener was accepted")
	}
}

// TestFailedAttempt: request bytes the client writes into a connection whose server side
// has already closed are a failed attempt; bytes that reach the server before its close,
// and a TLS close_notify sent in answer to the close, are not. The server here closes a
// connection idle for `idle` (its read deadline, as an HTTP server's idle timeout); the
// client's writes are placed against that close by the plan: a write due at the server
// rtt/2 after it leaves the client.
func TestFailedAttempt(t *testing.T) {
	t.Parallel()
	const (
		rtt  = 100 * time.Millisecond
		idle = 400 * time.Millisecond
	)
	server := func(c *net.TCPConn) {
		b := make([]byte, 64)
		for {
			_ = c.SetReadDeadline(time.Now().Add(idle))
			if _, err := c.Read(b); err != nil {
				_ = c.Close()
				return
			}
			_, _ = c.Write(b[:1])
		}
	}
	get := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n") // 27 bytes: small, but a request
	closeNotify := append([]byte{0x17, 0x03, 0x03, 0x00, 0x13}, make([]byte, 19)...)
	cases := []struct {
		name string
		// after reading the first answer at time a (the server answered at a-rtt/2 and
		// closes at a-rtt/2+idle if nothing more reaches it)
		client func(c *net.TCPConn)
		failed bool
	}{
		{name: "request racing the close", failed: true, client: func(c *net.TCPConn) {
			// Leaves rtt/4 before the FIN reaches the client, reaches the server rtt/4
			// after its close.
			time.Sleep(idle - rtt/4)
			_, _ = c.Write(get)
			_, _ = io.Copy(io.Discard, c)
		}},
		{name: "request after the FIN arrived", failed: true, client: func(c *net.TCPConn) {
			_, _ = io.Copy(io.Discard, c)
			_, _ = c.Write(get)
			time.Sleep(rtt)
		}},
		{name: "request in time, then idle close", client: func(c *net.TCPConn) {
			// Reaches the server at idle/2 of its idle clock: answered.
			time.Sleep(idle/2 - rtt)
			_, _ = c.Write(get)
			_, _ = io.Copy(io.Discard, c)
		}},
		{name: "close_notify after the FIN", client: func(c *net.TCPConn) {
			_, _ = io.Copy(io.Discard, c)
			_, _ = c.Write(closeNotify)
			time.Sleep(rtt)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			p, err := Start(Config{Upstream: tcpServer(t, server), RTT: rtt, OnConn: rec.add})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c := dial(t, p.Addr())
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			tc.client(c)
			_ = c.Close()
			waitFor(t, "record", func() bool { return len(rec.all()) == 1 })
			r := rec.all()[0]
			if r.ClosedBy != SideServer {
				t.Fatalf("record %+v: want the server's close first", r)
			}
			if r.FailedAttempt != tc.failed {
				t.Errorf("failed attempt %v, want %v (record %+v)", r.FailedAttempt, tc.failed, r)
			}
		})
	}
}
