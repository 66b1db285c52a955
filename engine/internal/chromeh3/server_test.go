package chromeh3

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/kalab-dev/kalab/engine/server"
)

// h3Server is an HTTP/3 server on 127.0.0.1 (quic-go) that keeps, for each QUIC connection
// it accepted, what the connection's qlog events and requests showed: the transport
// parameters Chromium sent, the PING frames it received, whether a request came in 0-RTT,
// how the connection ended, and the address of each request; and, below QUIC, when each
// datagram came from which address. Each response names its connection (X-Conn) and the
// address it came from (X-Remote).
type h3Server struct {
	Addr  string // 127.0.0.1:PORT
	SPKI  string // for Options.CertSPKI
	start time.Time
	trip  time.Duration // how long each datagram to Chromium is held, a one-way trip

	mu    sync.Mutex
	conns []*h3Conn
	from  map[string][]time.Duration // source address -> arrival of each datagram
}

// h3Conn is one QUIC connection the server accepted. Times are since the server started.
type h3Conn struct {
	ID     int
	Remote string // the address its first packet came from

	mu          sync.Mutex
	conn        *quic.Conn
	opened      time.Duration
	clientIdle  time.Duration   // the max_idle_timeout Chromium announced
	pings       []time.Duration // PING frames received in 1-RTT packets
	packets     []time.Duration // 1-RTT packets received
	lastStream  time.Duration   // the last STREAM frame received
	early       int             // STREAM frames of request streams received in 0-RTT packets
	closeFrame  string          // the CONNECTION_CLOSE Chromium sent, if any
	closedAt    time.Duration
	closeReason string // quic-go's connection_closed event
	requests    []h3Request
}

// h3Request is one request as the server saw it.
type h3Request struct {
	At     time.Duration
	Method string
	Path   string // with the query
	Remote string
}

type connKey struct{}

// startH3 starts the server with the given server max_idle_timeout. A request's hold=D
// query holds its response for D (an open stream while the connection is otherwise idle).
func startH3(t *testing.T, idle time.Duration) *h3Server {
	t.Helper()
	return startH3Trip(t, idle, 0)
}

// startH3Trip is startH3 with every datagram to Chromium held for trip: the server's
// handshake reaches Chromium no sooner than trip after its ClientHello left, as across a
// network, instead of within a millisecond, as on loopback.
func startH3Trip(t *testing.T, idle, trip time.Duration) *h3Server {
	t.Helper()
	cert, _, err := server.NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.Leaf.RawSubjectPublicKeyInfo)
	s := &h3Server{SPKI: base64.StdEncoding.EncodeToString(sum[:]), start: time.Now(), trip: trip, from: map[string][]time.Duration{}}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = udp.LocalAddr().String()
	tr := &quic.Transport{Conn: &countingConn{PacketConn: udp, s: s}, ConnContext: s.newConn}
	qconf := &quic.Config{MaxIdleTimeout: idle, Allow0RTT: true, Tracer: s.tracer}
	ln, err := tr.ListenEarly(http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}), qconf)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http3.Server{Handler: http.HandlerFunc(s.serve), ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
		hc := ctx.Value(connKey{}).(*h3Conn)
		hc.mu.Lock()
		hc.conn = c
		hc.mu.Unlock()
		return ctx
	}}
	go func() { _ = srv.ServeListener(ln) }()
	t.Cleanup(func() { _ = srv.Close(); _ = ln.Close(); _ = tr.Close() })
	return s
}

func (s *h3Server) since() time.Duration { return time.Since(s.start) }

// newConn numbers a new connection and puts it in the connection's context, where the
// tracer, http3.Server.ConnContext and the handler find it.
func (s *h3Server) newConn(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hc := &h3Conn{ID: len(s.conns) + 1, Remote: ci.RemoteAddr.String(), opened: s.since()}
	s.conns = append(s.conns, hc)
	return context.WithValue(ctx, connKey{}, hc), nil
}

// count is how many connections the server accepted.
func (s *h3Server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// conn returns connection id (1, 2, ...).
func (s *h3Server) conn(id int) *h3Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > len(s.conns) {
		return &h3Conn{}
	}
	return s.conns[id-1]
}

func (s *h3Server) serve(w http.ResponseWriter, r *http.Request) {
	hc := r.Context().Value(connKey{}).(*h3Conn)
	hc.mu.Lock()
	hc.requests = append(hc.requests, h3Request{At: s.since(), Method: r.Method, Path: r.URL.RequestURI(), Remote: r.RemoteAddr})
	hc.mu.Unlock()
	if hold, err := time.ParseDuration(r.URL.Query().Get("hold")); err == nil {
		time.Sleep(hold)
	}
	w.Header().Set("X-Conn", strconv.Itoa(hc.ID))
	w.Header().Set("X-Remote", r.RemoteAddr)
	fmt.Fprintf(w, "<!doctype html><title>connection %d</title>\n", hc.ID)
}

// datagramsFrom returns when datagrams came from addr.
func (s *h3Server) datagramsFrom(addr string) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.from[addr]...)
}

// countingConn notes the source and arrival of every datagram the server reads. quic-go
// reads a net.PacketConn without ReadMsgUDP one datagram at a time, through ReadFrom; the
// socket's buffer sizes and options it still sets on the UDP socket itself.
type countingConn struct {
	net.PacketConn
	s *h3Server
}

func (c *countingConn) udp() *net.UDPConn                     { return c.PacketConn.(*net.UDPConn) }
func (c *countingConn) SetReadBuffer(n int) error             { return c.udp().SetReadBuffer(n) }
func (c *countingConn) SetWriteBuffer(n int) error            { return c.udp().SetWriteBuffer(n) }
func (c *countingConn) SyscallConn() (syscall.RawConn, error) { return c.udp().SyscallConn() }

func (c *countingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(p)
	if err == nil {
		now := c.s.since()
		c.s.mu.Lock()
		c.s.from[addr.String()] = append(c.s.from[addr.String()], now)
		c.s.mu.Unlock()
	}
	return n, addr, err
}

// WriteTo sends p at once, or after the server's trip when it has one. A held datagram
// is copied: quic-go reuses p once WriteTo returns.
func (c *countingConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.s.trip == 0 {
		return c.PacketConn.WriteTo(p, addr)
	}
	held := append([]byte(nil), p...)
	time.AfterFunc(c.s.trip, func() { _, _ = c.PacketConn.WriteTo(held, addr) })
	return len(p), nil
}

// tracer gives each connection a qlog trace that records into its h3Conn.
func (s *h3Server) tracer(ctx context.Context, _ bool, _ quic.ConnectionID) qlogwriter.Trace {
	hc, _ := ctx.Value(connKey{}).(*h3Conn)
	if hc == nil {
		return nil
	}
	return &connTrace{s: s, hc: hc}
}

type connTrace struct {
	s  *h3Server
	hc *h3Conn
}

func (ct *connTrace) AddProducer() qlogwriter.Recorder { return ct }
func (ct *connTrace) Close() error                     { return nil }

// RecordEvent keeps what the measurements need of the connection's events.
func (ct *connTrace) RecordEvent(ev qlogwriter.Event) {
	now := ct.s.since()
	hc := ct.hc
	hc.mu.Lock()
	defer hc.mu.Unlock()
	switch e := ev.(type) {
	case qlog.ParametersSet:
		if e.SentBy.String() == "client" {
			hc.clientIdle = e.MaxIdleTimeout
		}
	case qlog.PacketReceived:
		if e.Header.PacketType == qlog.PacketType0RTT {
			hc.early += requestStreamFrames(e.Frames)
		}
		if e.Header.PacketType != qlog.PacketType1RTT {
			// The handshake's PINGs are QUICHE's chaos protection of the ClientHello
			// (quiche/quic/core/quic_chaos_protector.cc, AddPingFrames), not keep-alives.
			return
		}
		hc.packets = append(hc.packets, now)
		for _, f := range e.Frames {
			switch fr := f.Frame.(type) {
			case *qlog.PingFrame:
				hc.pings = append(hc.pings, now)
			case *qlog.StreamFrame:
				hc.lastStream = now
			case *qlog.ConnectionCloseFrame:
				hc.closeFrame = fmt.Sprintf("code %#x app=%v %q", fr.ErrorCode, fr.IsApplicationError, fr.ReasonPhrase)
			}
		}
	case qlog.ConnectionClosed:
		hc.closedAt = now
		hc.closeReason = fmt.Sprintf("by %s, trigger %q", e.Initiator, e.Trigger)
	}
}

// requestStreamFrames counts the STREAM frames of client-initiated bidirectional streams,
// HTTP/3's request streams (RFC 9000 section 2.1: stream id mod 4 == 0).
func requestStreamFrames(frames []qlog.Frame) int {
	n := 0
	for _, f := range frames {
		if sf, ok := f.Frame.(*qlog.StreamFrame); ok && sf.StreamID%4 == 0 {
			n++
		}
	}
	return n
}
