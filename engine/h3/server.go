package h3

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/kalab-dev/kalab/engine/server"
)

// ServerConfig is the embedded HTTP/3 server's settings.
type ServerConfig struct {
	IdleTimeout time.Duration   // the server's max_idle_timeout; 0 = quic-go's 30 s. The connection uses the smaller of both ends' (a quic-go client reads under 5 s as 5 s)
	ZeroRTT     bool            // accept 0-RTT data (quic.Config.Allow0RTT); its session tickets then allow it
	Status      int             // the response status; 0 = 200
	BodyBytes   int             // response body bytes
	Delay       time.Duration   // how long the handler waits before it answers
	Cert        tls.Certificate // the certificate served (server.NewCertificate makes one)
	Stamp       bool            // add server.ConnHeader and server.ConnRequestHeader to every response
	// StatelessReset answers a packet of a connection the server no longer has with a
	// stateless reset (RFC 9000 10.3), as production servers configured with a reset key
	// do, so the client learns at once. Without it such packets are dropped and the client
	// finds out only when its own idle timer fires.
	StatelessReset bool
	// Sleep, when set, waits out Delay instead of a timer: a precise clock's sleep.
	Sleep func(time.Duration)
}

// ServerStats are the server's counters since StartServer.
type ServerStats struct {
	Connections int64 // QUIC connections accepted (as soon as they could carry 0-RTT data)
	Requests    int64 // requests that reached the handler
	// ZeroRTTAccepted counts connections on which the server accepted 0-RTT data: it
	// received and decrypted a 0-RTT packet (quic-go drops the packets of a rejected
	// attempt undecrypted), the same connections whose ConnectionState().Used0RTT is set.
	ZeroRTTAccepted int64
	// ZeroRTTRequests counts requests handled before the handshake completed
	// (r.TLS.HandshakeComplete false): they came in 0-RTT, and an attacker could replay them.
	ZeroRTTRequests int64
	IdleTimeouts    int64 // connections the server closed by its idle timer after the handshake
	PathMigrations  int64 // times a connection moved to a new client address it had validated (a NAT rebinding)
	PingsSent       int64 // PING frames the server sent outside MTU probes (it sends no keep-alives: loss probes)
	// TLSHandshakes counts the TLS handshakes of the accepted connections (QUIC's handshake
	// is TLS 1.3's, one per connection: Connections), and TLSResumed those that resumed a
	// session from a ticket (the server's tls.ConnectionState().DidResume): the server's own
	// count, for a client that cannot say (Chromium).
	TLSHandshakes, TLSResumed int64
	Conns                     []ConnRecord
}

// ConnRecord is one accepted connection.
type ConnRecord struct {
	ID       uint64    // 1-based in accept order, as server.ConnHeader sends it
	Opened   time.Time // when quic-go created it (the client's first Initial arrived)
	Closed   time.Time // zero while open
	Heard    time.Time // when the last packet from the client arrived: an idle close comes IdleTimeout after it
	How      string    // how it ended (CloseIdleTimeout...); "" while open
	Requests int64
	ZeroRTT  bool // the server accepted 0-RTT data on it
}

// Server is a running embedded HTTP/3 server.
type Server struct {
	cfg    ServerConfig
	pc     net.PacketConn
	tr     *quic.Transport
	ln     *quic.EarlyListener
	srv    *http3.Server
	body   []byte
	served chan struct{} // closed when ServeListener returned

	nextID atomic.Uint64
	mu     sync.Mutex
	conns  []*connTrace // every connection quic-go created, in order

	closeOnce sync.Once
}

// connKey carries a connection's trace to its requests' handlers.
type connKey struct{}

// StartServer serves HTTP/3 on pc until Close, which also closes pc.
func StartServer(pc net.PacketConn, cfg ServerConfig) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("h3 server config: %w", err)
	}
	if cfg.Status == 0 {
		cfg.Status = http.StatusOK
	}
	s := &Server{cfg: cfg, pc: pc, tr: &quic.Transport{Conn: pc}, body: make([]byte, cfg.BodyBytes), served: make(chan struct{})}
	if cfg.StatelessReset {
		var key quic.StatelessResetKey
		if _, err := rand.Read(key[:]); err != nil {
			return nil, fmt.Errorf("h3 server: stateless reset key: %w", err)
		}
		s.tr.StatelessResetKey = &key
	}
	for i := range s.body {
		s.body[i] = 'k'
	}
	tlsConf := http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cfg.Cert}, MinVersion: tls.VersionTLS13})
	ln, err := s.tr.ListenEarly(tlsConf, &quic.Config{
		MaxIdleTimeout: cfg.IdleTimeout,
		Allow0RTT:      cfg.ZeroRTT,
		Tracer:         s.tracer,
	})
	if err != nil {
		_ = s.tr.Close() // the error returned says what failed
		return nil, fmt.Errorf("h3 server: listen: %w", err)
	}
	s.ln = ln
	s.srv = &http3.Server{Handler: http.HandlerFunc(s.handle), ConnContext: s.connContext}
	go func() {
		defer close(s.served)
		_ = s.srv.ServeListener(ln) // returns http.ErrServerClosed at Close
	}()
	return s, nil
}

func (cfg ServerConfig) check() error {
	switch {
	case cfg.IdleTimeout < 0, cfg.Delay < 0:
		return errors.New("idle timeout and delay must not be negative")
	case cfg.Status != 0 && (cfg.Status < 200 || cfg.Status > 599):
		return fmt.Errorf("status %d: must be 200-599", cfg.Status)
	case cfg.BodyBytes < 0 || cfg.BodyBytes > 64<<20:
		return fmt.Errorf("body bytes %d: must be 0-%d", cfg.BodyBytes, 64<<20)
	case len(cfg.Cert.Certificate) == 0:
		return errors.New("cert: none")
	}
	return nil
}

// tracer is the server's quic.Config.Tracer: a counting trace for every connection.
func (s *Server) tracer(context.Context, bool, quic.ConnectionID) qlogwriter.Trace {
	t := newConnTrace(false)
	s.mu.Lock()
	s.conns = append(s.conns, t)
	s.mu.Unlock()
	return t
}

// connContext numbers an accepted connection and hands its trace to its requests.
func (s *Server) connContext(ctx context.Context, c *quic.Conn) context.Context {
	t, ok := c.QlogTrace().(*connTrace)
	if !ok {
		return ctx
	}
	t.mu.Lock()
	t.id, t.conn = s.nextID.Add(1), c
	t.mu.Unlock()
	return context.WithValue(ctx, connKey{}, t)
}

// handle answers every request alike, after reading its whole body, as an application
// that parses its upload does.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	t, _ := r.Context().Value(connKey{}).(*connTrace)
	var id uint64
	var n int64
	if t != nil {
		t.mu.Lock()
		t.requests++
		if r.TLS != nil && !r.TLS.HandshakeComplete {
			t.zeroRTTReqs++
		}
		id, n = t.id, t.requests
		t.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r.Body)
	if !s.delay(r.Context()) {
		return
	}
	h := w.Header()
	if s.cfg.Stamp {
		h[server.ConnHeader] = []string{strconv.FormatUint(id, 10)}
		h[server.ConnRequestHeader] = []string{strconv.FormatInt(n, 10)}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(s.body))}
	w.WriteHeader(s.cfg.Status)
	if r.Method != http.MethodHead && len(s.body) > 0 {
		_, _ = w.Write(s.body) // an error means the client left
	}
}

// delay waits out cfg.Delay; false when the request went away first.
func (s *Server) delay(ctx context.Context) bool {
	switch {
	case s.cfg.Delay <= 0:
		return true
	case s.cfg.Sleep != nil:
		s.cfg.Sleep(s.cfg.Delay)
		return ctx.Err() == nil
	}
	t := time.NewTimer(s.cfg.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Addr is the address the server receives on.
func (s *Server) Addr() net.Addr { return s.pc.LocalAddr() }

// Stats returns the counters and the record of every accepted connection.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	traces := append([]*connTrace(nil), s.conns...)
	s.mu.Unlock()
	var st ServerStats
	var sum traceSums
	for _, t := range traces {
		sum.add(t)
		t.mu.Lock()
		conn := t.conn
		if t.id != 0 {
			st.Conns = append(st.Conns, ConnRecord{ID: t.id, Opened: t.opened, Closed: t.closedAt, Heard: t.heard, How: t.closed, Requests: t.requests, ZeroRTT: t.zeroRTT})
		}
		t.mu.Unlock()
		// Read outside the trace's lock: quic-go's ConnectionState takes the TLS handshake's
		// own lock. The server decided on resumption from the ClientHello, before quic-go
		// handed it the connection, so DidResume holds even for a connection whose client
		// closed it before its Finished arrived (a 0-RTT request answered, then the client
		// gone).
		if conn != nil && conn.ConnectionState().TLS.DidResume {
			st.TLSResumed++
		}
	}
	st.Connections = int64(len(st.Conns))
	st.TLSHandshakes = st.Connections
	st.Requests, st.ZeroRTTAccepted, st.ZeroRTTRequests = sum.requests, sum.zeroRTT, sum.zeroRTTReqs
	st.IdleTimeouts, st.PathMigrations, st.PingsSent = sum.idle, sum.migrations, sum.pings
	return st
}

// Close closes every connection (CONNECTION_CLOSE with H3_NO_ERROR), stops serving and
// closes the socket; it returns once quic-go's goroutines for them ended.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.srv.Close()
		if cerr := s.ln.Close(); err == nil {
			err = cerr
		}
		<-s.served
		_ = s.tr.Close() // the socket's own close, next, reports a failure to let go of it
		if cerr := s.pc.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

// The close reasons of the result schema that name what QUIC adds: a connection that ended
// in an error of its protocol or handshake, or with a stateless reset.
const (
	reasonError = "error"
	reasonReset = "reset"
)

// ServerConnRecords are the server's connections as the TCP server's records name their
// closes: its own idle timer, the client's CONNECTION_CLOSE, or its own at the end of the
// run; a handshake nobody completed, a stateless reset, a protocol error.
func ServerConnRecords(recs []ConnRecord) []server.ConnRecord {
	out := make([]server.ConnRecord, 0, len(recs))
	for _, c := range recs {
		r := server.ConnRecord{ID: c.ID, Opened: c.Opened, Closed: c.Closed, Requests: c.Requests}
		switch c.How {
		case "":
		case CloseIdleTimeout:
			r.ClosedBy, r.Reason = server.CloseByServer, server.ReasonIdle
		case CloseByServer:
			r.ClosedBy, r.Reason = server.CloseByServer, server.ReasonEnd
		case CloseByClient:
			r.ClosedBy, r.Reason = server.CloseByClient, server.ReasonUnknown
		case CloseHandshakeTimeout:
			// A handshake nobody completed: a replayed first flight, whose answers go nowhere.
			r.ClosedBy, r.Reason = server.CloseByServer, reasonError
		case CloseStatelessReset:
			r.ClosedBy, r.Reason = server.CloseByClient, reasonReset
		default:
			r.ClosedBy, r.Reason = server.CloseByClient, reasonError
		}
		out = append(out, r)
	}
	return out
}
