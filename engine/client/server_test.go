package client

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/vnet"
)

// rawServer is a small HTTP/1.1 server on a raw loopback listener, or on a vnet listener
// (newVRawServer). Each test scripts
// what happens to request number req (0-based, per connection) on connection number conn
// (0-based, in accept order), so socket conditions such as a reset or a FIN are exact.
type rawServer struct {
	ln        net.Listener
	addr      string
	idleClose time.Duration // the server closes a connection idle this long (FIN); 0 = never
	handle    func(s *serverConn) bool

	conns    atomic.Int64
	requests atomic.Int64
	open     atomic.Int64
	maxOpen  atomic.Int64

	mu    sync.Mutex
	live  map[net.Conn]struct{}
	heads []string // request heads, in arrival order
	wg    sync.WaitGroup
}

// serverConn is what a handler sees for one request.
type serverConn struct {
	net.Conn
	conn, req int
	head      string
}

// reply writes a complete 200 response with extra header lines (each ending in \r\n).
func (s *serverConn) reply(extra, body string) error {
	_, err := fmt.Fprintf(s, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s", len(body), extra, body)
	return err
}

// reset closes with SO_LINGER 0, so the peer gets an RST instead of a FIN (a real
// socket and a vnet connection both take SetLinger).
func (s *serverConn) reset() {
	if lc, ok := s.Conn.(interface{ SetLinger(int) error }); ok {
		lc.SetLinger(0)
	}
	s.Close()
}

// okHandler answers every request with a small keep-alive response.
func okHandler(s *serverConn) bool { return s.reply("", "hello") == nil }

func newRawServer(t testing.TB, idleClose time.Duration, handle func(s *serverConn) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return serveRaw(t, ln, idleClose, handle)
}

// newVNet returns an in-memory network closed at cleanup, after the clients and servers
// registered later (cleanups run last-registered first).
func newVNet(t testing.TB) *vnet.Network {
	n := vnet.New()
	t.Cleanup(func() { n.Close() })
	return n
}

// newVRawServer is newRawServer on the in-memory network n. Inside a synctest bubble
// its deadlines (idleClose, the 10 s bound) run on the virtual clock and its bytes, FINs
// and resets reach the client at the instant they are sent, so a test can say exactly
// when each thing happens. A client reaches it with Config{Addr: s.addr, Dial: n.DialContext}.
func newVRawServer(t testing.TB, n *vnet.Network, idleClose time.Duration, handle func(s *serverConn) bool) *rawServer {
	t.Helper()
	ln, err := n.Listen("")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return serveRaw(t, ln, idleClose, handle)
}

// serveRaw serves handle on ln until cleanup.
func serveRaw(t testing.TB, ln net.Listener, idleClose time.Duration, handle func(s *serverConn) bool) *rawServer {
	s := &rawServer{ln: ln, addr: ln.Addr().String(), idleClose: idleClose, handle: handle, live: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *rawServer) accept() {
	defer s.wg.Done()
	for i := 0; ; i++ {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		s.mu.Lock()
		s.live[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c, i)
	}
}

func (s *rawServer) serve(c net.Conn, idx int) {
	defer s.wg.Done()
	n := s.open.Add(1)
	for {
		m := s.maxOpen.Load()
		if n <= m || s.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	defer func() {
		s.open.Add(-1)
		c.Close()
		s.mu.Lock()
		delete(s.live, c)
		s.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	// Bounded: every connection ends after 1,000 requests or 10 s without one.
	for req := 0; req < 1000; req++ {
		wait := 10 * time.Second
		if req > 0 && s.idleClose > 0 {
			wait = s.idleClose
		}
		c.SetReadDeadline(time.Now().Add(wait))
		head, err := readHead(br)
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Time{})
		s.requests.Add(1)
		s.mu.Lock()
		s.heads = append(s.heads, head)
		s.mu.Unlock()
		if !s.handle(&serverConn{Conn: c, conn: idx, req: req, head: head}) {
			return
		}
	}
}

func readHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		if line == "\r\n" {
			return b.String(), nil
		}
		if b.Len() > 16<<10 {
			return "", errors.New("request head too long")
		}
	}
}

func (s *rawServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.live {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *rawServer) lastHead() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.heads) == 0 {
		return ""
	}
	return s.heads[len(s.heads)-1]
}
