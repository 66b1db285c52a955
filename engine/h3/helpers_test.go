package h3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/server"
)

// rtt is the tests' round trip: 50 ms each way.
const rtt = 100 * time.Millisecond

const serverIP = "10.0.0.1"

// lab is a server on a memNet and what a client needs to reach it. Make it inside a
// synctest bubble: the certificate is valid from the bubble's own now.
type lab struct {
	t    *testing.T
	net  *memNet
	cert tls.Certificate
	pool *x509.CertPool
	pc   *memConn
	srv  *Server
	addr string

	mu      sync.Mutex
	sockets []*memConn // the clients' sockets, in the order they were opened
}

func newLab(t *testing.T, cfg ServerConfig) *lab {
	t.Helper()
	cert, pool, err := server.NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, net: newMemNet(rtt / 2), cert: cert, pool: pool}
	l.start(cfg)
	return l
}

// start starts a server at the lab's address (again, after stop).
func (l *lab) start(cfg ServerConfig) {
	l.t.Helper()
	l.pc = l.net.listen(serverIP, 443)
	cfg.Cert, cfg.Stamp = l.cert, true
	srv, err := StartServer(l.pc, cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	l.srv, l.addr = srv, addrOf(l.pc)
	l.t.Cleanup(func() { srv.Close() }) // a test that failed half-way leaves no goroutine
}

func (l *lab) stop() {
	l.t.Helper()
	if err := l.srv.Close(); err != nil {
		l.t.Errorf("server close: %v", err)
	}
}

// client builds a client of the lab's server; each of its connections gets a new port.
func (l *lab) client(cfg ClientConfig) *Client {
	l.t.Helper()
	cfg.Addr, cfg.RootCAs = l.addr, l.pool
	cfg.ListenPacket = func() (net.PacketConn, error) {
		pc := l.net.listen("10.0.0.2", 0)
		l.mu.Lock()
		l.sockets = append(l.sockets, pc)
		l.mu.Unlock()
		return pc, nil
	}
	c, err := NewClient(cfg)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { c.Close() })
	return c
}

// do sends one request and fails the test unless it succeeded in exactly want.
func do(t *testing.T, c *Client, seq int, want time.Duration) client.Event {
	t.Helper()
	ev := c.Do(context.Background(), seq)
	if !ev.OK() || ev.Status != 200 {
		t.Fatalf("request %d: class %q status %d after %v on conn %d: %s", seq, ev.Class, ev.Status, ev.Latency, ev.ConnID, ev.Error)
	}
	if want >= 0 && ev.Latency != want {
		t.Errorf("request %d: latency %v, want %v", seq, ev.Latency, want)
	}
	return ev
}
