package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/client/wire"
	"github.com/kalab-dev/kalab/engine/fault"
)

// stdClient drives the real net/http.Transport and traces it. It is the go-net-http
// implementation, and the HTTP/2 path of both implementations.
type stdClient struct {
	cfg    Config
	tr     *http.Transport
	rt     http.RoundTripper // the caller's, for the go-func implementation; nil: tr
	req    *http.Request     // every request's method, URL and headers; WithContext per try
	reqErr error             // why the template could not be built
	body   []byte            // the upload (client.body_bytes), sent by every attempt
	traces sync.Pool         // *attemptTrace
	built  atomic.Int64      // traces built (tests: how often one was reused)
	stats  counters
	nextID atomic.Uint64
	ids    *atomic.Uint64 // nextID, or the counter the config shares
	closed atomic.Bool
}

// idConn tags a dialed connection with kalab's connection id, so traces can name it, and
// counts the tries that went out on it: a try is reused when its connection carried an
// earlier one, by kalab's own count, never by the Transport's GotConnInfo.Reused (which is
// true for a freshly dialled connection that waited in the idle pool before its first
// request).
type idConn struct {
	net.Conn
	id   uint64
	uses atomic.Int64
}

// newIDConn tags nc with the next id and tells the try that dialled it, if any, which
// connection its dial made (its connect and TLS phases belong to that connection).
func (s *stdClient) newIDConn(ctx context.Context, nc net.Conn) *idConn {
	ic := &idConn{Conn: nc, id: s.ids.Add(1)}
	if at, ok := ctx.Value(attemptKey{}).(*attemptTrace); ok {
		at.mu.Lock()
		at.dialedID = ic.id
		at.mu.Unlock()
	}
	return ic
}

// countedDial connects with connect, waits out the simulated link's handshake when there is
// one, and counts and names the connection.
func (s *stdClient) countedDial(connect DialFunc, handshake func(context.Context, time.Time, net.Conn) error) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		t0 := time.Now()
		nc, err := connect(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if handshake != nil {
			if err := handshake(ctx, t0, nc); err != nil {
				_ = nc.Close() // the error returned says what failed
				return nil, err
			}
			// httptrace's ConnectDone fired when the kernel connected; the request
			// that started this dial books the simulated handshake as connect time.
			if at, ok := ctx.Value(attemptKey{}).(*attemptTrace); ok {
				at.mu.Lock()
				if !at.connectStart.IsZero() {
					at.connect = time.Since(at.connectStart)
				}
				at.mu.Unlock()
			}
		}
		s.stats.connections.Add(1)
		return s.newIDConn(ctx, nc), nil
	}
}

// DialFunc is a Transport's DialContext.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

func newStdClient(cfg Config) *stdClient {
	s := &stdClient{cfg: cfg}
	s.ids = &s.nextID
	if cfg.ConnIDs != nil {
		s.ids = cfg.ConnIDs
	}
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
	}
	s.req, s.reqErr = requestTemplate(cfg, scheme+"://"+cfg.Addr+cfg.Path)
	if cfg.BodyBytes > 0 {
		s.body = requestBody(cfg.BodyBytes)
	}
	connect := dialer(cfg).DialContext
	if cfg.Dial != nil {
		connect = tracedDial(cfg.Dial, cfg.TCPKeepAlive)
	}
	tr := &http.Transport{
		Proxy:               nil, // never leave loopback through an environment proxy
		DialContext:         s.countedDial(connect, cfg.Handshake),
		DisableKeepAlives:   !cfg.KeepAlive,
		IdleConnTimeout:     cfg.IdleTimeout,
		MaxConnsPerHost:     cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxIdle,
		DisableCompression:  true, // count the bytes the server sent
	}
	if cfg.HTTP2 && cfg.Implementation != ImplGoNetHTTP && cfg.MaxConns == 0 {
		// The model multiplexes: a burst of concurrent requests waits for the connection
		// being dialed instead of dialing one each. Go's Transport dials once per waiting
		// request until the first HTTP/2 connection is up (golang/go#13957, #27753, and
		// #81646 for the wrapped implementation): 10,000 at once made 19,741 connections
		// here. For HTTP/2, MaxConnsPerHost bounds the dials in progress, not the
		// connections (net/http Transport docs), so a second connection still opens when
		// the first one's streams are all in use. go-net-http keeps Go's own behaviour.
		tr.MaxConnsPerHost = 1
	}
	if cfg.MaxIdle == 0 {
		// kalab's 0 means unlimited; the Transport's 0 means 2.
		tr.MaxIdleConnsPerHost = 1 << 30
	}
	if cfg.TLS {
		tr.TLSClientConfig = cfg.tlsConfig()
	}
	var p http.Protocols
	switch {
	case cfg.HTTP2 && cfg.TLS:
		p.SetHTTP2(true)
	case cfg.HTTP2:
		p.SetUnencryptedHTTP2(true) // h2c with prior knowledge
	default:
		p.SetHTTP1(true)
	}
	tr.Protocols = &p
	s.tr = tr
	return s
}

// requestTemplate builds the request every try copies (http.Request.WithContext): the URL is
// parsed and the headers built once. The Transport only reads them (an
// http.RoundTripper must not modify the request). A URL that does not parse leaves the
// error for every try to report, as http.NewRequest would.
func requestTemplate(cfg Config, url string) (*http.Request, error) {
	req, err := http.NewRequest(cfg.Method, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range cfg.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if cfg.KeepAliveHeader && cfg.KeepAlive && !cfg.HTTP2 {
		req.Header.Set("Connection", "keep-alive")
	}
	return req, nil
}

// Stats returns the cumulative counters.
func (s *stdClient) Stats() Stats { return s.stats.snapshot() }

// Close drops the Transport's idle connections.
func (s *stdClient) Close() error {
	s.closed.Store(true)
	if s.rt != nil {
		if c, ok := s.rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
		return nil
	}
	s.tr.CloseIdleConnections()
	return nil
}

// ImplGoFunc names the go-func implementation: a caller's own http.RoundTripper (see
// NewFunc), as kalabtest runs it.
const ImplGoFunc = "go-func"

// NewFunc returns the go-func implementation: the caller's RoundTripper drives the
// requests, traced like go-net-http (a second GotConn inside one RoundTrip is a hidden
// re-send). From cfg it takes the target, method, path, headers and timeout; pooling,
// keep-alive and TLS settings are rt's own, and kalab adds no retries of its own. If rt
// is an *http.Transport, its DialContext is wrapped so connections are named and counted;
// it dials real sockets (the real clock). NewFuncDial builds one that dials the run's
// own network.
func NewFunc(cfg Config, rt http.RoundTripper) (Client, error) {
	if rt == nil {
		return nil, fmt.Errorf("client config: go-func needs a RoundTripper")
	}
	s, err := newFuncClient(cfg)
	if err != nil {
		return nil, err
	}
	s.rt = rt
	if tr, ok := rt.(*http.Transport); ok {
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		tr.DialContext = s.countedDial(dial, nil)
	}
	return s, nil
}

// NewFuncDial is the go-func implementation around a dial kalab hands the caller: build
// makes the caller's RoundTripper around dial, which connects to the run's link, counts and
// names each connection. On the virtual clock (cfg.Dial set) it dials the in-memory
// network and waits out the link's handshake, and a RoundTripper that dials by other means
// reaches outside the run; on the real clock it is a net.Dialer, as NewFunc's.
func NewFuncDial(cfg Config, build func(dial DialFunc) (http.RoundTripper, error)) (Client, error) {
	s, err := newFuncClient(cfg)
	if err != nil {
		return nil, err
	}
	dial := s.countedDial((&net.Dialer{}).DialContext, nil)
	if cfg.Dial != nil {
		dial = s.countedDial(tracedDial(cfg.Dial, cfg.TCPKeepAlive), cfg.Handshake)
	}
	rt, err := build(dial)
	if err != nil {
		return nil, err
	}
	if rt == nil {
		return nil, fmt.Errorf("client config: go-func needs a RoundTripper")
	}
	s.rt = rt
	return s, nil
}

// newFuncClient is the traced client a go-func RoundTripper runs under.
func newFuncClient(cfg Config) (*stdClient, error) {
	cfg.Implementation, cfg.Retry = ImplGoNetHTTP, RetryPolicy{}
	cfg.HonorHint, cfg.LivenessCheck, cfg.Scheduling = false, false, ""
	cfg.KeepAliveHeader = false // the caller's client sends the headers it sends
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	return newStdClient(cfg), nil
}

// Do sends one logical request through the Transport, with kalab's visible retries on top
// of whatever the Transport re-sends on its own.
func (s *stdClient) Do(ctx context.Context, seq int) Event {
	start := time.Now()
	ev := Event{Seq: seq, Start: start}
	if s.closed.Load() {
		ev.Attempts, ev.Class, ev.Error = 1, ClassOther, errClosed.Error()
		return ev
	}
	idem := s.cfg.idempotent()
	for {
		ev.Attempts++
		r := s.attempt(ctx, start, &ev)
		if !shouldRetry(s.cfg.Retry, idem, ev.Attempts, r) {
			break
		}
		s.stats.retries.Add(1)
	}
	ev.Latency = time.Since(start)
	return ev
}

// attemptKey carries a request's *attemptTrace to the dial it starts.
type attemptKey struct{}

// attemptTrace collects what httptrace reports during one RoundTrip.
// Hooks of a dial the Transport started for this request may still run after RoundTrip
// returns (the dial finishes in the background), so the fields are guarded, and a trace is
// reused for a later request only when no dial can still report into it (reusable).
type attemptTrace struct {
	mu                     sync.Mutex
	getConns               int  // the Transport looked for a connection (GetConn)
	wasIdle                bool // and took an idle one at once: no dial was queued
	dialed                 bool // a dial reported (ConnectStart, TLSHandshakeStart)
	gotConns               int
	reused                 bool
	connID                 uint64
	own                    bool   // the connection is kalab's idConn (its history is counted)
	dialedID               uint64 // the connection this try's own dial made, if any
	connectStart, tlsStart time.Time
	connect, tlsDur        time.Duration
	firstByte              time.Time

	// Built once per trace, not per request: the hooks, and the context carrying them for
	// the last parent context they were attached to.
	hooks  httptrace.ClientTrace
	parent context.Context
	ctx    context.Context
	// req is the template carrying ctx, for tries that send it as it is (no body, no
	// timeout, no caller's RoundTripper): a try uses its trace alone, and the trace goes
	// back to the pool only after the response body was closed, when the Transport is done
	// with the request (net/http RoundTripper: callers may reuse it then).
	req *http.Request
}

// newTrace builds a trace whose hooks write into itself.
func (s *stdClient) newTrace() *attemptTrace {
	s.built.Add(1)
	at := &attemptTrace{}
	at.hooks = httptrace.ClientTrace{
		GetConn: func(string) {
			at.mu.Lock()
			at.getConns++
			at.mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			// One GotConn per try: a second one inside a RoundTrip is a hidden re-send.
			at.mu.Lock()
			defer at.mu.Unlock()
			at.gotConns++
			at.wasIdle = info.WasIdle
			ic := asIDConn(info.Conn)
			at.own, at.reused, at.connID = ic != nil, false, 0
			if ic != nil {
				at.reused, at.connID = ic.uses.Add(1) > 1, ic.id
			}
		},
		ConnectStart: func(string, string) {
			at.mu.Lock()
			at.dialed = true
			at.connectStart = time.Now()
			at.mu.Unlock()
		},
		ConnectDone: func(_, _ string, err error) {
			at.mu.Lock()
			defer at.mu.Unlock()
			if err == nil {
				at.connect = time.Since(at.connectStart)
			}
		},
		TLSHandshakeStart: func() {
			at.mu.Lock()
			at.dialed = true
			at.tlsStart = time.Now()
			at.mu.Unlock()
		},
		TLSHandshakeDone: func(cs tls.ConnectionState, err error) {
			at.mu.Lock()
			defer at.mu.Unlock()
			if err != nil {
				return
			}
			at.tlsDur = time.Since(at.tlsStart)
			s.stats.tlsHandshakes.Add(1)
			if cs.DidResume {
				s.stats.tlsResumed.Add(1)
			}
		},
		GotFirstResponseByte: func() {
			at.mu.Lock()
			at.firstByte = time.Now()
			at.mu.Unlock()
		},
	}
	return at
}

// trace returns a reset trace and the context carrying its hooks under ctx.
func (s *stdClient) trace(ctx context.Context) (*attemptTrace, context.Context) {
	at, _ := s.traces.Get().(*attemptTrace)
	if at == nil {
		at = s.newTrace()
	}
	at.mu.Lock()
	at.getConns, at.wasIdle, at.dialed, at.gotConns, at.reused, at.connID = 0, false, false, 0, false, 0
	at.own, at.dialedID = false, 0
	at.connectStart, at.tlsStart, at.connect, at.tlsDur, at.firstByte = time.Time{}, time.Time{}, 0, 0, time.Time{}
	at.mu.Unlock()
	if at.parent != ctx {
		// The dial this try may start finds its trace through attemptKey, to book the
		// simulated handshake as connect time.
		at.parent, at.ctx = ctx, httptrace.WithClientTrace(context.WithValue(ctx, attemptKey{}, at), &at.hooks)
	}
	return at, at.ctx
}

// reusable reports whether no hook can run into at any more: the try found its connection
// without queueing a dial (an idle one handed over at once, or an HTTP/2 connection in the
// Transport's pool, which calls no GetConn) and nothing was dialed or re-sent. Go's
// Transport queues a dial whenever no idle connection is free and lets it finish in the
// background (net/http transport.go getConn, queueForIdleConn, queueForDial): such a trace
// is left to the garbage collector.
func (at *attemptTrace) reusable() bool {
	at.mu.Lock()
	defer at.mu.Unlock()
	return !at.dialed && at.gotConns <= 1 && at.getConns <= 1 && (at.getConns == 0 || at.wasIdle)
}

func (s *stdClient) attempt(ctx context.Context, start time.Time, ev *Event) attemptResult {
	ev.ConnID, ev.Reused, ev.Status, ev.BytesRead, ev.ServerConn = 0, false, 0, 0, 0
	ev.BackendConn, ev.BackendAttempts, ev.BackendReused = 0, 0, false
	ev.Connect, ev.TLS, ev.FirstByte, ev.Class, ev.Error = 0, 0, 0, ClassNone, ""

	if s.reqErr != nil {
		ev.Class, ev.Error = Classify(s.reqErr), fmt.Errorf("build request: %w", s.reqErr).Error()
		return attemptResult{class: ev.Class}
	}
	at, actx := s.trace(ctx)
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, s.cfg.Timeout)
		defer cancel()
	}
	fail := func(r attemptResult, err error) attemptResult {
		if ctx.Err() != nil {
			r.cancelled = true
		}
		r.class = Classify(err)
		ev.Class, ev.Error = r.class, err.Error()
		return r
	}
	req, rt := s.request(actx, at)
	resp, err := rt.RoundTrip(req)
	// The trace hooks may still run on Transport goroutines for an abandoned dial, but
	// every hook for this request's tries has run once RoundTrip returns.
	r := s.record(ev, at, start)
	if err != nil {
		return fail(r, fmt.Errorf("round trip: %w", err))
	}
	ev.Status = resp.StatusCode
	// The embedded server's connection id (kalab's own header; see server.ConnHeader).
	// Parsed without strconv, whose error for a missing header allocates.
	if n, ok := wire.ParseUint([]byte(resp.Header.Get("Kalab-Conn"))); ok {
		ev.ServerConn = uint64(n)
	}
	backendHeaders(resp.Header, ev)
	if !at.own {
		// A connection kalab did not dial (the caller's RoundTripper): its history is the
		// embedded server's, the request's index on its connection.
		n, ok := wire.ParseUint([]byte(resp.Header.Get(headerConnRequest)))
		ev.Reused, r.reused = ok && n > 1, ok && n > 1
		if ev.Reused {
			ev.Connect, ev.TLS = 0, 0
		}
	}
	if resp.ProtoMajor == 2 {
		s.stats.h2Streams.Add(1)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // the body was read to its end above: closing it can lose nothing
	ev.BytesRead = n
	if err != nil {
		return fail(r, fmt.Errorf("read response body: %w", err))
	}
	if at.reusable() {
		s.traces.Put(at)
	}
	return r
}

// request is one attempt's request and the RoundTripper that sends it. With no body, no
// timeout and kalab's own transport it reuses the trace's request, so that the common path
// does not allocate one.
func (s *stdClient) request(actx context.Context, at *attemptTrace) (*http.Request, http.RoundTripper) {
	var req *http.Request
	if actx == at.ctx && len(s.body) == 0 && s.rt == nil && !s.cfg.HTTP2NoResend {
		if at.req == nil || at.req.Context() != actx {
			at.req = s.req.WithContext(actx)
		}
		req = at.req
	} else {
		req = s.req.WithContext(actx)
	}
	if n := len(s.body); n > 0 {
		// A fresh reader per attempt over the one body: the template holds none.
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(s.body)), int64(n)
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(s.body)), nil }
	}
	if s.cfg.HTTP2NoResend {
		// A body Go cannot replay (no GetBody) makes its Transport hand a stream the server did
		// not process to the caller instead of re-sending it (h2_bundle.go shouldRetryRequest,
		// request.go isReplayable), as Node's http2 client and undici do.
		if req.Body == nil {
			req.Body = io.NopCloser(bytes.NewReader(nil))
		}
		req.GetBody = nil
	}
	if s.rt != nil {
		// The caller's RoundTripper may set headers of its own: not on the shared map.
		req.Header = s.req.Header.Clone()
	}
	if s.rt != nil {
		return req, s.rt
	}
	return req, s.tr
}

// record copies one try's trace into the event and counts hidden re-sends.
func (s *stdClient) record(ev *Event, at *attemptTrace, start time.Time) attemptResult {
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.gotConns > 1 && !fault.On(fault.HiddenUncounted) {
		hidden := at.gotConns - 1
		ev.HiddenRetries += hidden
		s.stats.hiddenRetries.Add(int64(hidden))
	}
	ev.ConnID, ev.Reused = at.connID, at.reused
	ev.Connect, ev.TLS = at.connect, at.tlsDur
	if at.reused || (at.own && at.connID != at.dialedID) {
		// The phases were of a dial this try did not use (the Transport handed it another
		// connection and parked the new one in the idle pool).
		ev.Connect, ev.TLS = 0, 0
	}
	if !at.firstByte.IsZero() {
		ev.FirstByte = at.firstByte.Sub(start)
	}
	return attemptResult{reused: at.reused, gotByte: !at.firstByte.IsZero()}
}

// headerConnRequest is the embedded server's stamp of a request's 1-based index on its
// connection (server.ConnRequestHeader).
const headerConnRequest = "Kalab-Conn-Request"

// asIDConn finds kalab's connection under whatever the Transport wrapped the dialed conn
// in; nil for a connection kalab did not dial.
func asIDConn(c net.Conn) *idConn {
	for c != nil {
		switch x := c.(type) {
		case *idConn:
			return x
		case *tls.Conn:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// backendHeaders reads what a kalab balancer says about the backend side of a response.
func backendHeaders(h http.Header, ev *Event) {
	if v := h.Get(HeaderBackendConn); v != "" {
		if n, ok := wire.ParseUint([]byte(v)); ok {
			ev.BackendConn = uint64(n)
		}
	}
	if v := h.Get(HeaderBackendAttempts); v != "" {
		if n, ok := wire.ParseUint([]byte(v)); ok && n < 1<<20 {
			ev.BackendAttempts = int(n)
		}
	}
	ev.BackendReused = h.Get(HeaderBackendReused) == "1"
}

// tracedDial reports a dial through the request's httptrace hooks, as net.Dialer does
// (ConnectStart, ConnectDone), and sets the connection's keepalive as net.Dialer would: a
// dial function of the caller's does neither.
func tracedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), ka net.KeepAliveConfig) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		trace := httptrace.ContextClientTrace(ctx)
		if trace != nil && trace.ConnectStart != nil {
			trace.ConnectStart(network, addr)
		}
		nc, err := dial(ctx, network, addr)
		if trace != nil && trace.ConnectDone != nil {
			trace.ConnectDone(network, addr, err)
		}
		if err == nil {
			keepAlive(nc, ka)
		}
		return nc, err
	}
}
