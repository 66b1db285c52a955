package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Response headers written when Config.Stamp is set (canonical form, so they can be set
// on the header map directly). Through a proxy the client and the server see different
// ports; ConnHeader names the server's connection so a client can note the name (the
// runner ties the server's close records to the client's connections with it).
const (
	ConnHeader        = "Kalab-Conn"         // the connection's id, 1-based in accept order
	ConnRequestHeader = "Kalab-Conn-Request" // the request's 1-based index on its connection
)

// closeWait bounds how long Close waits for connections and handlers to end, so a
// stuck peer can never hang a run; net/http itself may hold a connection up to 500 ms
// after a "Connection: close" response (its RST-avoidance linger).
const closeWait = 10 * time.Second

// idleSlack absorbs the microseconds between the StateIdle hook and the moment the
// idle timer is armed, so a close at exactly IdleTimeout is still counted as idle.
const idleSlack = time.Millisecond

// goAwayGrace is how long Go's HTTP/2 server keeps an idle connection open after the
// GOAWAY its idle timer sends: once the GOAWAY is written and no stream is open, serve's
// loop calls sc.shutDownIn(http2goAwayTimeout), a fixed second (net/http h2_bundle.go,
// serve: "Start the shutdown timer after sending a GOAWAY", and http2goAwayTimeout = 1 *
// time.Second, "Measuring RTT is hard, so we approximate with 1 second", Go 1.26). An
// HTTP/2 connection's idle close is due at IdleTimeout plus this grace, not at IdleTimeout:
// measured from IdleTimeout, every one read exactly a second late, on either clock.
const goAwayGrace = time.Second

// Server is a running embedded server. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	ln      net.Listener
	srv     *http.Server // the first generation's; see Event for the others
	ev      *events      // set when Config.Events has any
	cert    tls.Certificate
	rootCAs *x509.CertPool
	caPEM   []byte
	body    []byte
	bodyLen string
	status  int
	hint    string // Keep-Alive value for responses that stay open; "" sends none

	connections, open, requests, idleCloses atomic.Int64
	nextConnID                              atomic.Int64
	tlsHandshakes, tlsResumed, h2Streams    atomic.Int64
	maxOnOneConn, serverCloses, h1Responses atomic.Int64

	conns    sync.Map // underlying net.Conn -> *connInfo, while open
	peers    sync.Map // int client port of every accepted connection -> struct{}
	histMu   sync.Mutex
	closedBy map[int64]int64 // closed connections: requests served -> count
	closed   []ConnRecord    // closed connections in the order they closed, guarded by histMu
	closedAt map[uint64]int  // connection id -> index in closed, guarded by histMu

	connWG    sync.WaitGroup // one per accepted connection, done at StateClosed
	handlers  counter        // handler calls in flight
	closing   atomic.Bool
	serveDone chan struct{}
	serveErr  error
	closeOnce sync.Once
	closeErr  error
}

// connInfo is what the server remembers about one connection.
type connInfo struct {
	id        int64  // 1-based, in accept order
	idText    string // id in decimal, for the ConnHeader of every response
	opened    time.Time
	requests  atomic.Int64
	idleSince atomic.Int64               // UnixNano when the connection last went idle; 0 while active
	http1     atomic.Bool                // it served an HTTP/1.1 request: the precise idle close applies
	idleTimer *time.Timer                // the precise idle close's lead timer; only the ConnState hook touches it
	closing   atomic.Value               // string: the reason the server put "Connection: close" on a response
	gen       atomic.Pointer[generation] // the generation serving it, with Config.Events
}

type connKey struct{}

// Stats is a snapshot of the server's counters since Start.
type Stats struct {
	// Connections is the number of TCP connections accepted.
	Connections int64
	// Open is the number of connections open at the time of the snapshot.
	Open int64
	// Requests is the number of requests that reached the handler (HTTP/1.1 requests
	// plus HTTP/2 streams); a request sent on a connection the server already closed
	// is not counted, which is how the stale-connection race shows on the server side.
	Requests int64
	// IdleCloses counts connections the server closed because they stayed idle for
	// IdleTimeout (for HTTP/2: the GOAWAY the idle timer sent, followed by the close).
	IdleCloses int64
	// TLSHandshakes counts completed TLS handshakes, resumed ones included.
	TLSHandshakes int64
	// TLSResumed counts the handshakes that resumed a session from a ticket.
	TLSResumed int64
	// H2Streams counts requests served over HTTP/2.
	H2Streams int64
	// MaxRequestsOnOneConn is the most requests any single connection carried.
	MaxRequestsOnOneConn int64
	// ServerCloses counts HTTP/1.1 responses on which the server chose to send
	// "Connection: close" (MaxRequests reached or CloseEvery), not counting requests
	// whose client asked to close.
	ServerCloses int64
	// RequestsPerConn maps a number of requests to how many connections, open or
	// closed, carried exactly that many (0 = connected but never sent a request).
	RequestsPerConn map[int64]int64
}

// Start validates cfg, binds its loopback address and serves until Close.
func Start(cfg Config) (*Server, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("starting server: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		body:      makeBody(cfg.BodyBytes),
		bodyLen:   strconv.Itoa(cfg.BodyBytes),
		status:    cfg.Status,
		hint:      hintValue(cfg),
		closedBy:  make(map[int64]int64),
		closedAt:  make(map[uint64]int),
		serveDone: make(chan struct{}),
	}
	if cfg.TLS {
		makeCert := NewCertificate
		if cfg.Ed25519Cert {
			makeCert = ed25519Certificate
		}
		cert, pool, err := makeCert()
		if err != nil {
			return nil, fmt.Errorf("starting server: %w", err)
		}
		s.cert = cert
		s.rootCAs = pool
		s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	}
	s.srv = s.newHTTPServer()
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, fmt.Errorf("starting server: listening on %s: %w", cfg.Listen, err)
		}
	}
	s.ln = ln
	if len(cfg.Events) > 0 {
		s.serveWithEvents()
		return s, nil
	}
	go func() {
		defer close(s.serveDone)
		if cfg.TLS {
			// ServeTLS adds the ALPN protocols ("h2", "http/1.1") that Protocols allows.
			s.serveErr = s.srv.ServeTLS(ln, "", "")
		} else {
			s.serveErr = s.srv.Serve(ln)
		}
	}()
	return s, nil
}

// makeBody returns n printable bytes; content is irrelevant, length is the contract.
// newHTTPServer is the net/http server of one generation (see Event): the first, or the
// one a reload or a restart starts. Every generation shares the certificate, the handler
// and the connection hooks.
func (s *Server) newHTTPServer() *http.Server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	srv := &http.Server{
		Handler:     http.HandlerFunc(s.handle),
		IdleTimeout: s.cfg.IdleTimeout,
		ConnContext: s.connContext,
		ConnState:   s.connState,
		Protocols:   &protos,
		HTTP2:       &http.HTTP2Config{MaxConcurrentStreams: s.cfg.MaxConcurrentStreams},
		// Handshake failures and client resets are part of the experiments; they are
		// counted by the client, not printed by the server.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if s.cfg.TLS {
		srv.TLSConfig = &tls.Config{
			Certificates:           []tls.Certificate{s.cert},
			MinVersion:             s.cfg.TLSVersion,
			MaxVersion:             s.cfg.TLSVersion,
			SessionTicketsDisabled: !s.cfg.SessionTickets,
			// VerifyConnection runs on the server for full and resumed handshakes alike,
			// after the session is settled, so it is the one place to count both.
			VerifyConnection: func(cs tls.ConnectionState) error {
				s.tlsHandshakes.Add(1)
				if cs.DidResume {
					s.tlsResumed.Add(1)
				}
				return nil
			},
		}
		if s.cfg.HTTP2 {
			protos.SetHTTP2(true)
		}
	} else if s.cfg.HTTP2 {
		protos.SetUnencryptedHTTP2(true) // h2c with prior knowledge
	}
	return srv
}

func makeBody(n int) []byte {
	const pattern = "kalab embedded server response body\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern[i%len(pattern)]
	}
	return b
}

// hintValue precomputes the Keep-Alive header value, "" for none.
func hintValue(cfg Config) string {
	var v string
	switch cfg.Hint {
	case HintRaw:
		return cfg.HintRaw // verbatim: no max= is appended to a raw value
	case HintOn:
		if cfg.IdleTimeout <= 0 {
			return "" // Node sends no hint when keepAliveTimeout is 0
		}
		v = "timeout=" + strconv.FormatInt(int64(cfg.IdleTimeout/time.Second), 10)
	case HintDuration:
		v = "timeout=" + strconv.FormatInt(int64(cfg.HintDuration/time.Second), 10)
	default:
		return ""
	}
	if cfg.MaxRequests > 0 && !cfg.HintCountdown {
		// Node appends the configured maxRequestsPerSocket unchanged on every response.
		v += ", max=" + strconv.Itoa(cfg.MaxRequests)
	}
	return v
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// AcceptedFrom reports whether the server accepted a connection from the client port peer.
func (s *Server) AcceptedFrom(peer int) bool {
	_, ok := s.peers.Load(peer)
	return ok
}

// RootCAs returns a pool that trusts the server's in-memory certificate, or nil for a
// plain-TCP server. Clients verify with it; nothing in kalab skips verification.
func (s *Server) RootCAs() *x509.CertPool { return s.rootCAs }

// CAPEM returns the server's self-signed certificate in PEM form, for programs outside
// the process (curl --cacert, NODE_EXTRA_CA_CERTS); nil for a plain-TCP server.
func (s *Server) CAPEM() []byte { return s.caPEM }

// ServerName is the name the certificate is valid for, to use as the TLS ServerName
// (SNI). The certificate also covers 127.0.0.1 and ::1.
func (s *Server) ServerName() string { return certName }

// Config returns the configuration the server runs with, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Stats returns a snapshot of the counters. Each field is read atomically; fields are
// exactly consistent with each other once traffic has stopped, which is when the
// runner reads them.
func (s *Server) Stats() Stats {
	st := Stats{
		Connections:          s.connections.Load(),
		Open:                 s.open.Load(),
		Requests:             s.requests.Load(),
		IdleCloses:           s.idleCloses.Load(),
		TLSHandshakes:        s.tlsHandshakes.Load(),
		TLSResumed:           s.tlsResumed.Load(),
		H2Streams:            s.h2Streams.Load(),
		MaxRequestsOnOneConn: s.maxOnOneConn.Load(),
		ServerCloses:         s.serverCloses.Load(),
		RequestsPerConn:      make(map[int64]int64),
	}
	s.histMu.Lock()
	for k, v := range s.closedBy {
		st.RequestsPerConn[k] += v
	}
	s.histMu.Unlock()
	s.conns.Range(func(_, v any) bool {
		st.RequestsPerConn[v.(*connInfo).requests.Load()]++
		return true
	})
	return st
}

// Close stops accepting, closes every connection at once and returns after every
// connection and handler has ended (or closeWait passed, reported as an error).
// Calling it again returns the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		var errs []error
		if err := s.closeServing(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing server: %w", err))
		}
		deadline := time.Now().Add(closeWait)
		select {
		case <-s.serveDone:
			if s.serveErr != nil && !errors.Is(s.serveErr, http.ErrServerClosed) {
				errs = append(errs, fmt.Errorf("serving: %w", s.serveErr))
			}
		case <-time.After(time.Until(deadline)):
			errs = append(errs, errors.New("closing server: accept loop did not stop"))
		}
		connsDone := make(chan struct{})
		go func() { s.connWG.Wait(); close(connsDone) }()
		select {
		case <-connsDone:
		case <-time.After(time.Until(deadline)):
			// The waiter goroutine ends when the stragglers do; it holds nothing else.
			errs = append(errs, fmt.Errorf("closing server: %d connections still open after %v", s.open.Load(), closeWait))
		}
		if !s.handlers.waitZero(time.After(time.Until(deadline))) {
			errs = append(errs, fmt.Errorf("closing server: handlers still running after %v", closeWait))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// closeServing stops accepting and closes every connection at once.
func (s *Server) closeServing() error {
	if s.ev != nil {
		return s.closeEvents()
	}
	return s.srv.Close()
}

// underlying returns the TCP connection under a TLS one, so the ConnContext and
// ConnState keys agree for HTTP/1.1, HTTP/2 over TLS and h2c (which net/http hands to
// the HTTP/2 server wrapped in a *tls.Conn shell).
func underlying(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// connContext runs once per accepted connection, before its goroutine starts.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	id := s.nextConnID.Add(1)
	ci := &connInfo{id: id, idText: strconv.FormatInt(id, 10), opened: time.Now()}
	s.conns.Store(underlying(c), ci)
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		s.peers.Store(a.Port, struct{}{})
	}
	s.connWG.Add(1)
	s.connections.Add(1)
	s.open.Add(1)
	return context.WithValue(ctx, connKey{}, ci)
}

// connState tracks idle periods and retires connections; net/http and its HTTP/2
// server may both report StateClosed for one connection, so retiring is idempotent.
func (s *Server) connState(c net.Conn, st http.ConnState) { s.connStateIn(c, st, nil) }

// connStateIn is connState for a connection of generation g (nil without events), whose
// retirement names why its connections close.
func (s *Server) connStateIn(c net.Conn, st http.ConnState, g *generation) {
	switch st {
	case http.StateNew:
		s.genConnOpened(c, g)
	case http.StateActive:
		if v, ok := s.conns.Load(underlying(c)); ok {
			v.(*connInfo).idleSince.Store(0)
		}
	case http.StateIdle:
		if v, ok := s.conns.Load(underlying(c)); ok {
			ci := v.(*connInfo)
			ci.idleSince.Store(time.Now().UnixNano())
			s.armIdleClose(c, ci)
		}
	case http.StateClosed, http.StateHijacked:
		v, ok := s.conns.LoadAndDelete(underlying(c))
		if !ok {
			return
		}
		ci := v.(*connInfo)
		now := time.Now()
		if ci.idleTimer != nil {
			ci.idleTimer.Stop()
		}
		rec := ConnRecord{ID: uint64(ci.id), Opened: ci.opened, Closed: now, Requests: ci.requests.Load()}
		switch reason, _ := ci.closing.Load().(string); {
		case s.closing.Load():
			rec.ClosedBy, rec.Reason = CloseByServer, ReasonEnd
		case reason != "":
			rec.ClosedBy, rec.Reason = CloseByServer, reason
		case g != nil && g.reason.Load() != nil:
			rec.ClosedBy, rec.Reason = CloseByServer, g.reason.Load().(string)
		default:
			if since := ci.idleSince.Load(); since != 0 && s.cfg.IdleTimeout > 0 &&
				now.Sub(time.Unix(0, since)) >= s.cfg.IdleTimeout-idleSlack {
				s.idleCloses.Add(1)
				due := time.Unix(0, since).Add(s.cfg.IdleTimeout + s.idleCloseGrace(ci))
				s.cfg.Lag.AddAt(due, now.Sub(due))
				rec.ClosedBy, rec.Reason = CloseByServer, ReasonIdle
			} else {
				// net/http does not say whether the peer sent a FIN or a reset, or why.
				rec.ClosedBy, rec.Reason = CloseByClient, ReasonUnknown
			}
		}
		s.histMu.Lock()
		s.closedBy[rec.Requests]++
		s.closedAt[rec.ID] = len(s.closed)
		s.closed = append(s.closed, rec)
		s.histMu.Unlock()
		s.open.Add(-1)
		s.connWG.Done()
		s.genConnClosed(g)
	}
}

// idleCloseGrace is how long after IdleTimeout the server's idle close of ci is due: 0 for
// HTTP/1.1, whose close armIdleClose makes on the instant, and the GOAWAY's grace for
// HTTP/2 (Config.GoAwayGrace, else goAwayGrace), whose idle timer sends a GOAWAY that
// net/http follows with the close a second later. A connection idle without an HTTP/1.1
// request is HTTP/2's: net/http's HTTP/1.1 server reports StateIdle only after a
// response, its HTTP/2 server as soon as the connection is set up (h2_bundle.go, serve:
// setConnState(StateActive) then setConnState(StateIdle)).
func (s *Server) idleCloseGrace(ci *connInfo) time.Duration {
	switch {
	case ci.http1.Load():
		return 0
	case s.cfg.GoAwayGrace > 0:
		return s.cfg.GoAwayGrace
	}
	return goAwayGrace
}

// idleLead is how long before an idle close the precise clock takes over from a Go timer.
const idleLead = 2 * time.Millisecond

// armIdleClose makes the server close c itself at exactly IdleTimeout after it went idle,
// when Config.Sleep is set and c speaks HTTP/1.1 (an HTTP/2 connection's idle timer ends in
// a GOAWAY that net/http sends). A Go timer wakes idleLead early, the precise clock waits
// out the rest, and c is closed only if it is still in the same idle period. net/http's
// read deadline, armed for the same instant, stays as the backstop; the close it makes is
// the same (a TLS close_notify, then a FIN), so the client cannot tell which one fired.
func (s *Server) armIdleClose(c net.Conn, ci *connInfo) {
	if s.cfg.Sleep == nil || s.cfg.IdleTimeout <= 0 || !ci.http1.Load() {
		return
	}
	lead := max(s.cfg.IdleTimeout-idleLead, 0)
	if ci.idleTimer != nil {
		ci.idleTimer.Reset(lead)
		return
	}
	ci.idleTimer = time.AfterFunc(lead, func() {
		since := ci.idleSince.Load()
		if since == 0 || s.closing.Load() {
			return // active again, or the server is closing every connection anyway
		}
		if !s.cfg.Sleep(time.Unix(0, since).Add(s.cfg.IdleTimeout), s.serveDone) {
			return
		}
		if ci.idleSince.Load() == since && !s.closing.Load() {
			_ = c.Close()
		}
	})
}

// delay waits out Config.Delay before a response, on Config.Wait when set; false when done
// closes first.
func (s *Server) delay(done <-chan struct{}) bool {
	switch {
	case s.cfg.Delay <= 0:
		return true
	case s.cfg.Wait != nil:
		return s.cfg.Wait(time.Now().Add(s.cfg.Delay), done)
	}
	t := time.NewTimer(s.cfg.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// handle answers every request with the configured status, headers and body.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.handlers.add(1)
	defer s.handlers.add(-1)
	if nth := s.requests.Add(1); s.ev != nil {
		defer s.afterRequest(nth)
	}
	n, id := int64(1), int64(0)
	ci, _ := r.Context().Value(connKey{}).(*connInfo)
	if ci != nil {
		id = ci.id
		n = ci.requests.Add(1)
		for m := s.maxOnOneConn.Load(); n > m && !s.maxOnOneConn.CompareAndSwap(m, n); m = s.maxOnOneConn.Load() {
		}
	}
	if r.ProtoMajor == 2 {
		s.h2Streams.Add(1)
	}
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(r, id, n)
	}
	// Read the whole upload before answering, as an application that parses its body
	// does; net/http would otherwise drain at most 256 KiB and close the connection.
	_, _ = io.Copy(io.Discard, r.Body)
	if !s.delay(r.Context().Done()) {
		return // the client went away or the server is closing
	}
	h := w.Header()
	if r.ProtoMajor == 1 {
		if ci != nil && !ci.http1.Load() {
			ci.http1.Store(true)
		}
		if reason := s.connectionHeaders(h, r, n); reason != "" && ci != nil {
			ci.closing.Store(reason)
		}
	}
	if s.cfg.Stamp {
		if ci != nil {
			h[ConnHeader] = []string{ci.idText}
		} else {
			h[ConnHeader] = []string{strconv.FormatInt(id, 10)}
		}
		h[ConnRequestHeader] = []string{strconv.FormatInt(n, 10)}
	}
	h["Content-Length"] = []string{s.bodyLen}
	h["Content-Type"] = []string{"text/plain; charset=utf-8"} // set, so net/http skips sniffing
	w.WriteHeader(s.status)
	if r.Method != http.MethodHead && len(s.body) > 0 {
		_, _ = w.Write(s.body) // a write error means the client left; nothing to report
	}
}

// connectionHeaders decides, for HTTP/1.1, whether this response closes the
// connection and otherwise which Keep-Alive hint it carries. n is the request's
// position on its connection, 1-based. It returns why the response closes the
// connection (a Reason), or "" when it does not.
func (s *Server) connectionHeaders(h http.Header, r *http.Request, n int64) string {
	closeNow := ""
	if s.cfg.MaxRequests > 0 && n >= int64(s.cfg.MaxRequests) {
		closeNow = ReasonMaxRequests
	}
	if s.cfg.CloseEvery > 0 && s.h1Responses.Add(1)%int64(s.cfg.CloseEvery) == 0 {
		closeNow = ReasonCloseEvery
	}
	if closeNow != "" {
		h["Connection"] = []string{"close"} // net/http then closes after the response
		if !r.Close {
			s.serverCloses.Add(1)
		} else {
			closeNow = ReasonRequested
		}
		return closeNow
	}
	if r.Close {
		return ReasonRequested // net/http closes after answering "Connection: close"
	}
	if s.hint == "" {
		return "" // no hint on a response that ends the connection anyway
	}
	if s.cfg.HintOnlyIfAsked {
		if !headerHasToken(r.Header["Connection"], "keep-alive") {
			return ""
		}
		h["Connection"] = []string{"Keep-Alive"} // Apache answers the token in kind
	}
	if s.cfg.HintCountdown && s.cfg.MaxRequests > 0 && s.cfg.Hint != HintRaw {
		// Apache: left = MaxKeepAliveRequests - keep-alive responses so far
		// (modules/http/http_protocol.c ap_set_keepalive).
		h["Keep-Alive"] = []string{s.hint + ", max=" + strconv.FormatInt(int64(s.cfg.MaxRequests)-n, 10)}
		return ""
	}
	h["Keep-Alive"] = []string{s.hint}
	return ""
}

// headerHasToken reports whether a comma-separated header contains token,
// case-insensitively.
func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// counter is a WaitGroup that tolerates Add after a Wait began: HTTP/2 handler
// goroutines may start after their connection closed and must still be waited for.
type counter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to zero while someone waits
}

func (c *counter) add(d int) {
	c.mu.Lock()
	c.n += d
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

// waitZero blocks until the count is zero or timeout fires; it reports success.
func (c *counter) waitZero(timeout <-chan time.Time) bool {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return true
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	ch := c.zero
	c.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-timeout:
		return false
	}
}
