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
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// stdClient drives the real net/http.Transport and traces it. It is the go-net-http
// implementation, and the HTTP/2 path of both implementations.
type stdClient struct {
	cfg    Config
	tr     *http.Transport
	rt     http.RoundTripper // the caller's, for the go-func implementation; nil: tr
	url    string
	stats  counters
	nextID atomic.Uint64
	closed atomic.Bool
}

// idConn tags a dialed connection with kalab's connection id, so traces can name it.
type idConn struct {
	net.Conn
	id uint64
}

func newStdClient(cfg Config) *stdClient {
	s := &stdClient{cfg: cfg}
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
	}
	s.url = scheme + "://" + cfg.Addr + cfg.Path
	dialer := &net.Dialer{}
	tr := &http.Transport{
		Proxy: nil, // never leave loopback through an environment proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			s.stats.connections.Add(1)
			return &idConn{Conn: nc, id: s.nextID.Add(1)}, nil
		},
		DisableKeepAlives:   !cfg.KeepAlive,
		IdleConnTimeout:     cfg.IdleTimeout,
		MaxConnsPerHost:     cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxIdle,
		DisableCompression:  true, // count the bytes the server sent
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
// is an *http.Transport, Wrap it first so connections are named and counted.
func NewFunc(cfg Config, rt http.RoundTripper) (Client, error) {
	if rt == nil {
		return nil, fmt.Errorf("client config: go-func needs a RoundTripper")
	}
	cfg.Implementation, cfg.Retry = ImplGoNetHTTP, RetryPolicy{}
	cfg.HonorHint, cfg.LivenessCheck, cfg.Scheduling = false, false, ""
	cfg.KeepAliveHeader = false // the caller's client sends the headers it sends
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	s := newStdClient(cfg)
	s.rt = rt
	if tr, ok := rt.(*http.Transport); ok {
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			s.stats.connections.Add(1)
			return &idConn{Conn: nc, id: s.nextID.Add(1)}, nil
		}
	}
	return s, nil
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

// attemptTrace collects what httptrace reports during one RoundTrip.
// Hooks of a dial the Transport started for this request may still run after RoundTrip
// returns (the dial finishes in the background), so the fields are guarded.
type attemptTrace struct {
	mu                     sync.Mutex
	gotConns               int
	reused                 bool
	connID                 uint64
	connectStart, tlsStart time.Time
	connect, tlsDur        time.Duration
	firstByte              time.Time
}

func (s *stdClient) attempt(ctx context.Context, start time.Time, ev *Event) attemptResult {
	ev.ConnID, ev.Reused, ev.Status, ev.BytesRead, ev.ServerConn = 0, false, 0, 0, 0
	ev.BackendConn, ev.BackendAttempts, ev.BackendReused = 0, 0, false
	ev.Connect, ev.TLS, ev.FirstByte, ev.Class, ev.Error = 0, 0, 0, ClassNone, ""

	var at attemptTrace
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			// One GotConn per try: a second one inside a RoundTrip is a hidden re-send.
			at.mu.Lock()
			defer at.mu.Unlock()
			at.gotConns++
			at.reused = info.Reused
			at.connID = connID(info.Conn)
			if info.Reused {
				at.connect, at.tlsDur = 0, 0
			}
		},
		ConnectStart: func(string, string) {
			at.mu.Lock()
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
	actx := httptrace.WithClientTrace(ctx, trace)
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
	var body io.Reader
	if s.cfg.BodyBytes > 0 {
		body = bytes.NewReader(requestBody(s.cfg.BodyBytes))
	}
	req, err := http.NewRequestWithContext(actx, s.cfg.Method, s.url, body)
	if err != nil {
		return fail(attemptResult{}, fmt.Errorf("build request: %w", err))
	}
	for k, v := range s.cfg.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if s.cfg.KeepAliveHeader && s.cfg.KeepAlive && !s.cfg.HTTP2 {
		req.Header.Set("Connection", "keep-alive")
	}
	var rt http.RoundTripper = s.tr
	if s.rt != nil {
		rt = s.rt
	}
	resp, err := rt.RoundTrip(req)
	// The trace hooks may still run on Transport goroutines for an abandoned dial, but
	// every hook for this request's tries has run once RoundTrip returns.
	r := s.record(ev, &at, start)
	if err != nil {
		return fail(r, fmt.Errorf("round trip: %w", err))
	}
	ev.Status = resp.StatusCode
	// The embedded server's connection id (kalab's own header; see server.ConnHeader).
	ev.ServerConn, _ = strconv.ParseUint(resp.Header.Get("Kalab-Conn"), 10, 64)
	backendHeaders(resp.Header, ev)
	if resp.ProtoMajor == 2 {
		s.stats.h2Streams.Add(1)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ev.BytesRead = n
	if err != nil {
		return fail(r, fmt.Errorf("read response body: %w", err))
	}
	return r
}

// record copies one try's trace into the event and counts hidden re-sends.
func (s *stdClient) record(ev *Event, at *attemptTrace, start time.Time) attemptResult {
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.gotConns > 1 {
		hidden := at.gotConns - 1
		ev.HiddenRetries += hidden
		s.stats.hiddenRetries.Add(int64(hidden))
	}
	ev.ConnID, ev.Reused = at.connID, at.reused
	ev.Connect, ev.TLS = at.connect, at.tlsDur
	if !at.firstByte.IsZero() {
		ev.FirstByte = at.firstByte.Sub(start)
	}
	return attemptResult{reused: at.reused, gotByte: !at.firstByte.IsZero()}
}

// connID finds kalab's id under whatever the Transport wrapped the dialed conn in.
func connID(c net.Conn) uint64 {
	for c != nil {
		switch x := c.(type) {
		case *idConn:
			return x.id
		case *tls.Conn:
			c = x.NetConn()
		default:
			return 0
		}
	}
	return 0
}

// backendHeaders reads what a kalab balancer says about the backend side of a response.
func backendHeaders(h http.Header, ev *Event) {
	if v := h.Get(HeaderBackendConn); v != "" {
		if n, ok := parseUint([]byte(v)); ok {
			ev.BackendConn = uint64(n)
		}
	}
	if v := h.Get(HeaderBackendAttempts); v != "" {
		if n, ok := parseUint([]byte(v)); ok && n < 1<<20 {
			ev.BackendAttempts = int(n)
		}
	}
	ev.BackendReused = h.Get(HeaderBackendReused) == "1"
}
