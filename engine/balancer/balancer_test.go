package balancer

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// backend is a raw HTTP/1.1 server on a real socket whose behaviour per request is
// scripted: it answers, or closes the connection under the request, the way a server
// whose idle timeout fired as the request arrived does.
type backend struct {
	ln       net.Listener
	conns    atomic.Int64
	requests atomic.Int64
	// closeOn decides, for the n-th request (1-based) on a connection and the k-th
	// request overall, whether to close instead of answering.
	closeOn func(n, k int64) bool
	// idleClose, when set, closes a connection (a FIN) that stays idle this long after a
	// response, as a server's idle timeout does.
	idleClose time.Duration
	wg        sync.WaitGroup
}

func startBackend(t *testing.T, closeOn func(n, k int64) bool) *backend {
	t.Helper()
	return startIdleBackend(t, closeOn, 0)
}

// startIdleBackend starts a backend whose idle connections close after idleClose.
func startIdleBackend(t *testing.T, closeOn func(n, k int64) bool, idleClose time.Duration) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{ln: ln, closeOn: closeOn, idleClose: idleClose}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.conns.Add(1)
			b.wg.Add(1)
			go func() { defer b.wg.Done(); b.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); b.wg.Wait() })
	return b
}

func (b *backend) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := int64(1); ; n++ {
		length := 0
		if b.idleClose > 0 && n > 1 {
			c.SetReadDeadline(time.Now().Add(b.idleClose))
		}
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
			c.SetReadDeadline(time.Time{})
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "content-length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if _, err := io.CopyN(io.Discard, br, int64(length)); err != nil {
			return
		}
		k := b.requests.Add(1)
		if b.closeOn != nil && b.closeOn(n, k) {
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // a reset, as a server closing a socket with unread data sends
			}
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	}
}

func startBalancer(t *testing.T, cfg Config) *Balancer {
	t.Helper()
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func modelClient(t *testing.T, addr, method string) client.Client {
	t.Helper()
	c, err := client.New(client.Config{Addr: addr, Method: method, KeepAlive: true, LivenessCheck: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestForwardsAndReusesBackendConnection(t *testing.T) {
	t.Parallel()
	be := startBackend(t, nil)
	b := startBalancer(t, Config{Backend: client.Config{Addr: be.ln.Addr().String(), KeepAlive: true, LivenessCheck: true}})
	c := modelClient(t, b.Addr(), "GET")
	for i := range 5 {
		ev := c.Do(context.Background(), i)
		if !ev.OK() || ev.Status != 200 || ev.BytesRead != 5 {
			t.Fatalf("request %d: %+v", i, ev)
		}
		if ev.BackendConn != 1 || ev.BackendAttempts != 1 || ev.BackendReused != (i > 0) {
			t.Fatalf("request %d: backend conn %d attempts %d reused %v; want 1, 1, %v", i, ev.BackendConn, ev.BackendAttempts, ev.BackendReused, i > 0)
		}
	}
	st := b.Stats()
	if st.Requests != 5 || st.BackendConnections != 1 || st.BackendReused != 4 || st.Connections != 1 || st.ErrorResponses != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The second request on each backend connection meets a server that closes under it.
func TestPolicyOnBackendDeathUnderRequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		policy      Policy
		method      string
		wantStatus  int
		wantRetries int64
		wantConns   int64
	}{
		{PolicyError, "GET", 502, 0, 1},
		{PolicyRetryIdempotent, "GET", 200, 1, 2},
		{PolicyRetryIdempotent, "PUT", 200, 1, 2}, // nginx retries every method but POST, LOCK, PATCH
		{PolicyRetryIdempotent, "POST", 502, 0, 1},
		{PolicyRetryAny, "POST", 200, 1, 2},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy)+"/"+tc.method, func(t *testing.T) {
			t.Parallel()
			be := startBackend(t, func(n, _ int64) bool { return n == 2 })
			b := startBalancer(t, Config{OnError: tc.policy, Retries: 3,
				Backend: client.Config{Addr: be.ln.Addr().String(), KeepAlive: true, LivenessCheck: true, Timeout: 5 * time.Second}})
			c := modelClient(t, b.Addr(), tc.method)
			if ev := c.Do(context.Background(), 0); ev.Status != 200 {
				t.Fatalf("first request: %+v", ev)
			}
			ev := c.Do(context.Background(), 1)
			if !ev.OK() || ev.Status != tc.wantStatus {
				t.Fatalf("second request: status %d (%s %s), want %d", ev.Status, ev.Class, ev.Error, tc.wantStatus)
			}
			if int64(ev.BackendAttempts-1) != tc.wantRetries || ev.Attempts != 1 {
				t.Fatalf("backend attempts %d, client attempts %d; want %d hidden retries and 1 client attempt", ev.BackendAttempts, ev.Attempts, tc.wantRetries)
			}
			st := b.Stats()
			failed := st.BackendErrors[client.ClassReset] + st.BackendErrors[client.ClassEOF]
			want502 := int64(0)
			if tc.wantStatus == 502 {
				want502 = 1
			}
			if st.Retries != tc.wantRetries || st.BackendConnections != tc.wantConns || failed != 1 || st.ErrorResponses != want502 {
				t.Fatalf("stats %+v; want retries %d, backend connections %d, 1 failed attempt, %d error responses", st, tc.wantRetries, tc.wantConns, want502)
			}
		})
	}
}

// A fresh backend connection that fails is not re-sent: nginx adds a try only for a
// cached connection.
func TestNoRetryOnFreshConnection(t *testing.T) {
	t.Parallel()
	be := startBackend(t, func(n, _ int64) bool { return true })
	b := startBalancer(t, Config{OnError: PolicyRetryAny, Retries: 3, ErrorStatus: 503,
		Backend: client.Config{Addr: be.ln.Addr().String(), KeepAlive: true, LivenessCheck: true, Timeout: 5 * time.Second}})
	ev := modelClient(t, b.Addr(), "GET").Do(context.Background(), 0)
	if ev.Status != 503 || ev.BackendAttempts != 1 {
		t.Fatalf("status %d, backend attempts %d; want 503 after 1 attempt", ev.Status, ev.BackendAttempts)
	}
	if st := b.Stats(); st.Retries != 0 || st.ErrorResponses != 1 || be.conns.Load() != 1 {
		t.Fatalf("stats %+v, backend saw %d connections", st, be.conns.Load())
	}
}

// HAProxy "http-reuse safe": the first request of each client connection gets its own
// backend connection; "always" shares the idle one.
func TestReuseSafe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reuse     Reuse
		wantConns int64
	}{{ReuseAlways, 1}, {ReuseSafe, 3}} {
		t.Run(string(tc.reuse), func(t *testing.T) {
			t.Parallel()
			be := startBackend(t, nil)
			b := startBalancer(t, Config{Reuse: tc.reuse, Backend: client.Config{Addr: be.ln.Addr().String(), KeepAlive: true, LivenessCheck: true}})
			// Three client connections, one after another, two requests each.
			for i := range 3 {
				c, err := client.New(client.Config{Addr: b.Addr(), KeepAlive: true})
				if err != nil {
					t.Fatal(err)
				}
				for j := range 2 {
					if ev := c.Do(context.Background(), 2*i+j); ev.Status != 200 {
						t.Fatalf("request %d/%d: %+v", i, j, ev)
					}
				}
				c.Close()
			}
			if st := b.Stats(); st.BackendConnections != tc.wantConns || st.Connections != 3 {
				t.Fatalf("stats %+v; want %d backend connections for 3 client connections", st, tc.wantConns)
			}
		})
	}
}

// TestIdleTimeoutsBothSides, on the virtual clock over vnet, against the embedded server
// (its own idle close a minute away): the balancer closes an idle client-facing connection
// and its pool an idle backend connection, each exactly IdleTimeout (150 ms) after the
// response that left it idle. vnet has no delay, so a request's response ends at the
// instant it is sent: a request 1 ns before the timeouts reuses both connections and
// restarts both; 1 ns before they end again both are open, at their instant both are
// closed, and the next request opens new connections on both sides.
func TestIdleTimeoutsBothSides(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const idle = 150 * time.Millisecond
		n := vnet.New()
		t.Cleanup(func() { n.Close() })
		sl, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		srv, err := server.Start(server.Config{Listener: sl, IdleTimeout: time.Minute, BodyBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		bl, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		b := startBalancer(t, Config{Listener: bl, IdleTimeout: idle,
			Backend: client.Config{Addr: srv.Addr(), Dial: n.DialContext, KeepAlive: true, LivenessCheck: true, IdleTimeout: idle}})
		c, err := client.New(client.Config{Addr: b.Addr(), Dial: n.DialContext, KeepAlive: true, LivenessCheck: true, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })

		start := time.Now()
		do := func(i int, reused bool, backendConn uint64) {
			t.Helper()
			ev := c.Do(context.Background(), i)
			if ev.Status != 200 || ev.BytesRead != 100 || ev.Reused != reused || ev.BackendReused != reused || ev.BackendConn != backendConn {
				t.Fatalf("request %d at %v: %+v; want reused %v on both sides, backend connection %d", i, time.Since(start), ev, reused, backendConn)
			}
		}
		// open checks the connections open on each side: the balancer's client-facing
		// ones and the server's (the backend pool's).
		open := func(when string, want int64) {
			t.Helper()
			synctest.Wait()
			if fo, bo := b.Stats().Open, srv.Stats().Open; fo != want || bo != want {
				t.Fatalf("%s: %d client-facing and %d backend connections open, want %d and %d", when, fo, bo, want, want)
			}
		}
		do(0, false, 1)
		do(1, true, 1)
		time.Sleep(idle - time.Nanosecond)
		do(2, true, 1)
		last := time.Now()
		time.Sleep(idle - time.Nanosecond)
		open("1 ns before the idle timeouts", 1)
		time.Sleep(time.Nanosecond)
		open(fmt.Sprintf("at %v after the last response", time.Since(last)), 0)
		do(3, false, 2)
		st := b.Stats()
		if st.Connections != 2 || st.BackendConnections != 2 || st.BackendReused != 2 || srv.Stats().Connections != 2 {
			t.Fatalf("stats %+v, server %+v; want 2 connections on each side, 2 backend reuses", st, srv.Stats())
		}
	})
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Listen: "0.0.0.0:0", Backend: client.Config{Addr: "127.0.0.1:1"}},
		{OnError: "retry_sometimes", Backend: client.Config{Addr: "127.0.0.1:1"}},
		{Reuse: "aggressive", Backend: client.Config{Addr: "127.0.0.1:1"}},
		{ErrorStatus: 200, Backend: client.Config{Addr: "127.0.0.1:1"}},
		{Backend: client.Config{Addr: "10.0.0.1:80"}},
		{Backend: client.Config{Addr: "127.0.0.1:1", HTTP2: true}},
	} {
		if b, err := Start(cfg); err == nil {
			b.Close()
			t.Errorf("Start(%+v) succeeded; want an error", cfg)
		}
	}
}

var _ = http.StatusOK
