// Package balancer is kalab's embedded HTTP/1.1 reverse proxy: the load balancer of a
// multi-hop topology. Its client-facing side is a net/http server with an idle timeout;
// its backend side is the model client's explicit pool (engine/client.Pool), so backend
// reuse, idle closes and the policy on a backend connection that dies under a request are
// exact and counted.
package balancer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/fault"
)

// Policy says what the balancer does when the backend connection carrying a request fails
// before any response byte arrived.
type Policy string

// Policies.
const (
	// PolicyError answers ErrorStatus at once: AWS ALB's 502 when the target closed the
	// connection (ALB docs, "Connection idle timeout"); Envoy's 503 with no retry policy.
	PolicyError Policy = "error"
	// PolicyRetryIdempotent re-sends a request whose method is not POST, LOCK or PATCH
	// when the failed connection was a reused one (nginx proxy_next_upstream error
	// timeout, its default; non_idempotent unset since 1.9.13).
	PolicyRetryIdempotent Policy = "retry_idempotent"
	// PolicyRetryAny re-sends any request under the same rule (nginx with non_idempotent).
	PolicyRetryAny Policy = "retry_any"
	// PolicyClose closes the client connection without a response when the dead backend
	// connection was a reused one and the client connection had served a request before,
	// so the client sees an ordinary keep-alive close it may retry; otherwise it answers
	// ErrorStatus. Measured on HAProxy 2.6 with its defaults (http-reuse safe, retry-on
	// conn-failure): TestHAProxyPolicyMatchesRealHAProxy.
	PolicyClose Policy = "close"
)

// Reuse says which idle backend connections a request may take.
type Reuse string

// Reuse modes.
const (
	// ReuseAlways lets every request take an idle backend connection (ALB, nginx, Envoy,
	// HAProxy "http-reuse always").
	ReuseAlways Reuse = "always"
	// ReuseSafe sends the first request of each client connection on a new backend
	// connection; later ones may reuse (HAProxy "http-reuse safe", its default).
	ReuseSafe Reuse = "safe"
)

// Config is a resolved balancer. Durations are already scaled by the runner.
type Config struct {
	// Listen is the client-facing address; "127.0.0.1:0" when empty. Loopback only.
	Listen string
	// Listener, when set, is where the balancer accepts instead of binding Listen: an
	// in-memory listener of a run on the virtual clock. The backend pool dials through
	// Backend.Dial.
	Listener net.Listener
	// IdleTimeout closes an idle client-facing connection; 0 never does.
	IdleTimeout time.Duration
	// Backend is the pool to the server: Addr, KeepAlive, IdleTimeout, MaxIdle, MaxConns,
	// Scheduling, LivenessCheck, Timeout and TLS settings. Its Retry is set from OnError.
	Backend client.Config
	// OnError is the policy on a failed backend attempt; default PolicyError.
	OnError Policy
	// Retries bounds the re-sends of one request under a retry policy.
	Retries int
	// ErrorStatus answers a request the backend side could not serve; default 502.
	ErrorStatus int
	// Reuse selects the sharing of idle backend connections; default ReuseAlways.
	Reuse Reuse
}

// Stats are the balancer's cumulative counters.
type Stats struct {
	Connections        int64 // client-facing connections accepted
	Open               int64 // client-facing connections open now
	Requests           int64 // requests received from clients
	ErrorResponses     int64 // answers with ErrorStatus the balancer made itself
	ClientCloses       int64 // client connections closed without a response (PolicyClose)
	Retries            int64 // backend re-sends the client never saw
	BackendConnections int64 // connections opened to the backend
	BackendReused      int64 // requests whose final backend attempt reused a connection
	// BackendErrors counts failed backend attempts by class, retried ones included.
	BackendErrors map[client.ErrorClass]int64
}

// maxBody bounds a forwarded request body.
const maxBody = 1 << 20

// Balancer is a running reverse proxy.
type Balancer struct {
	cfg  Config
	ln   net.Listener
	srv  *http.Server
	pool *client.Pool

	connections, open, requests, errorResponses, clientCloses, retries, backendReused, seq atomic.Int64

	book connBook

	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

type connKey struct{}

// Start validates cfg, binds the client-facing address and serves until Close.
func Start(cfg Config) (*Balancer, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if err := checkLoopback(cfg.Listen); err != nil {
		return nil, fmt.Errorf("starting balancer: %w", err)
	}
	if cfg.ErrorStatus == 0 {
		cfg.ErrorStatus = http.StatusBadGateway
	}
	if cfg.ErrorStatus < 500 || cfg.ErrorStatus > 599 {
		return nil, fmt.Errorf("starting balancer: error status %d: must be 500-599", cfg.ErrorStatus)
	}
	if cfg.IdleTimeout < 0 || cfg.Retries < 0 {
		return nil, errors.New("starting balancer: idle timeout and retries must not be negative")
	}
	if cfg.Reuse == "" {
		cfg.Reuse = ReuseAlways
	}
	if cfg.Reuse != ReuseAlways && cfg.Reuse != ReuseSafe {
		return nil, fmt.Errorf("starting balancer: reuse %q: want %q or %q", cfg.Reuse, ReuseAlways, ReuseSafe)
	}
	retry := client.RetryPolicy{On: client.Classes, ReusedOnly: true, ZeroBytesOnly: true}
	switch cfg.OnError {
	case "", PolicyError:
		cfg.OnError = PolicyError
	case PolicyClose:
	case PolicyRetryIdempotent:
		retry.Attempts, retry.IdempotentOnly = cfg.Retries, true
	case PolicyRetryAny:
		retry.Attempts = cfg.Retries
	default:
		return nil, fmt.Errorf("starting balancer: policy %q: want %q, %q, %q or %q", cfg.OnError, PolicyError, PolicyRetryIdempotent, PolicyRetryAny, PolicyClose)
	}
	// nginx adds a try only when the failed upstream connection came from its keepalive
	// cache (ngx_http_upstream_next: "if (u->peer.cached && ft_type == ...FT_ERROR)
	// u->peer.tries++"), so with one upstream server a re-send follows a reused
	// connection's failure only, and only before any response byte reached the client.
	cfg.Backend.Retry = retry
	pool, err := client.NewPool(cfg.Backend)
	if err != nil {
		return nil, fmt.Errorf("starting balancer: backend %w", err)
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			_ = pool.Close() // the error returned says what failed
			return nil, fmt.Errorf("starting balancer: listening on %s: %w", cfg.Listen, err)
		}
	}
	b := &Balancer{cfg: cfg, pool: pool, serveDone: make(chan struct{})}
	b.ln = trackListener{Listener: ln, book: &b.book}
	var protos http.Protocols
	protos.SetHTTP1(true)
	b.srv = &http.Server{
		Handler:     http.HandlerFunc(b.handle),
		IdleTimeout: cfg.IdleTimeout,
		Protocols:   &protos,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: b.connState,
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(b.serveDone)
		_ = b.srv.Serve(b.ln)
	}()
	return b, nil
}

// Addr is the client-facing host:port.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// Stats returns a snapshot of the counters.
func (b *Balancer) Stats() Stats {
	ps := b.pool.Stats()
	return Stats{
		Connections:        b.connections.Load(),
		Open:               b.open.Load(),
		Requests:           b.requests.Load(),
		ErrorResponses:     b.errorResponses.Load(),
		ClientCloses:       b.clientCloses.Load(),
		Retries:            b.retries.Load(),
		BackendConnections: ps.Connections,
		BackendReused:      b.backendReused.Load(),
		BackendErrors:      ps.AttemptErrors,
	}
}

// Conns returns the records of the client-facing connections, in accept order: when each
// opened and closed, who closed it and why.
func (b *Balancer) Conns() []ConnRecord { return b.book.all() }

// Deregister takes the backend's current target out of service, as a balancer does for a
// target it deregisters (AWS ALB: "stops sending requests to targets that are
// deregistering"): no request goes on a backend connection open now, an idle one is not
// reused and a busy one is not pooled after its response; later requests go on new
// connections. It closes none of them: the target ends them (engine/server's deregister).
func (b *Balancer) Deregister() error {
	if fault.On(fault.DeregisterReuses) {
		return nil
	}
	return b.pool.Retire()
}

// Close stops accepting, closes client-facing connections and the backend pool.
func (b *Balancer) Close() error {
	b.closeOnce.Do(func() {
		b.book.closing.Store(true)
		err := b.srv.Close()
		<-b.serveDone
		if perr := b.pool.Close(); err == nil || errors.Is(err, net.ErrClosed) {
			err = perr
		}
		if err != nil && !errors.Is(err, net.ErrClosed) {
			b.closeErr = fmt.Errorf("closing balancer: %w", err)
		}
	})
	return b.closeErr
}

func (b *Balancer) connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*trackedConn); ok {
		tc.idle.Store(st == http.StateIdle)
	}
	switch st {
	case http.StateNew:
		b.connections.Add(1)
		b.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		b.open.Add(-1)
	}
}

// filler is what a relayed body is made of: the embedded server's body is filler too, and
// the balancer relays its length, status and keep-alive semantics, not its bytes.
var filler = func() []byte {
	const pattern = "kalab embedded server response body\n"
	b := make([]byte, 32<<10)
	for i := range b {
		b[i] = pattern[i%len(pattern)]
	}
	return b
}()

// handle forwards one request through the backend pool and relays the outcome.
func (b *Balancer) handle(w http.ResponseWriter, r *http.Request) {
	b.requests.Add(1)
	n := int64(1)
	tc, _ := r.Context().Value(connKey{}).(*trackedConn)
	if tc != nil {
		n = tc.requests.Add(1)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return // the client went away
	}
	req := client.Request{Method: r.Method, Path: r.URL.RequestURI(), Body: body, Fresh: b.cfg.Reuse == ReuseSafe && n == 1}
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		req.Headers = map[string]string{"Idempotency-Key": k}
	}
	ev := b.pool.Send(r.Context(), int(b.seq.Add(1)), req)
	if ev.Attempts > 1 {
		b.retries.Add(int64(ev.Attempts - 1))
	}
	if !ev.OK() && r.Context().Err() != nil {
		return // the client left; nothing to answer
	}
	if !ev.OK() && b.cfg.OnError == PolicyClose && ev.Reused && n > 1 {
		// Nothing has been written: aborting makes net/http close the connection.
		b.clientCloses.Add(1)
		if tc != nil {
			tc.aborted.Store(true)
		}
		panic(http.ErrAbortHandler)
	}
	h := w.Header()
	h[client.HeaderBackendConn] = []string{strconv.FormatUint(ev.ConnID, 10)}
	h[client.HeaderBackendAttempts] = []string{strconv.Itoa(ev.Attempts)}
	if ev.Reused {
		h[client.HeaderBackendReused] = []string{"1"}
	}
	if !ev.OK() {
		b.errorResponses.Add(1)
		msg := fmt.Sprintf("kalab balancer: backend %s: %s\n", ev.Class, ev.Error)
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["Content-Length"] = []string{strconv.Itoa(len(msg))}
		w.WriteHeader(b.cfg.ErrorStatus)
		_, _ = io.WriteString(w, msg)
		return
	}
	if ev.Reused {
		b.backendReused.Add(1)
	}
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Content-Length"] = []string{strconv.FormatInt(ev.BytesRead, 10)}
	w.WriteHeader(ev.Status)
	if r.Method == http.MethodHead {
		return
	}
	for left := ev.BytesRead; left > 0; {
		k := min(left, int64(len(filler)))
		if _, err := w.Write(filler[:k]); err != nil {
			return
		}
		left -= k
	}
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q: not a loopback IP (kalab binds 127.0.0.0/8 or ::1 only)", addr)
	}
	return nil
}
