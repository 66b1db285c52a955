// Package probe measures, on the real clock, what an HTTP server does with idle and reused
// connections: when it closes an idle connection and how (FIN, RST, or a silent drop on the
// path), the Keep-Alive hint it sends, how many requests it serves on one connection, the
// protocols it offers, the round trip to it, and TLS resumption. A value not found within
// the probe's budget is reported as such ("above X", "not seen"), never as a number.
package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/loopback"
)

// The defaults of Options, printed by kalab probe.
const (
	DefaultMaxIdle        = 120 * time.Second
	DefaultResolution     = 100 * time.Millisecond
	DefaultParallel       = 8
	DefaultMaxConns       = 64
	DefaultMaxRequests    = 100
	DefaultBudget         = 3 * time.Minute
	DefaultRequestTimeout = 3 * time.Second
)

// Options are one probe's target and budgets. Zero fields take the defaults above.
type Options struct {
	URL         string
	AllowRemote bool   // a host outside loopback (as a scenario's server.url needs --allow-remote)
	Method      string // GET (default) or HEAD
	// MaxIdle is the longest idle gap tried: a server still open after it is reported as
	// "above MaxIdle".
	MaxIdle time.Duration
	// Resolution is the width at which the bisection of a close that cannot be seen (a
	// silent drop) stops.
	Resolution time.Duration
	// Parallel is how many connections each bisection round holds idle at once.
	Parallel int
	// MaxConns, MaxRequests and Budget are the hard budgets: connections opened in all,
	// requests sent on the one connection that counts requests per connection, and the
	// wall time of the whole probe.
	MaxConns    int
	MaxRequests int
	Budget      time.Duration
	// RequestTimeout is how long a response may take before the request counts as
	// unanswered (a silent drop shows that way).
	RequestTimeout time.Duration
	// Dial, RootCAs and ServerName replace the system's dialer, trust store and the URL's
	// host name (tests use them for the in-memory network and the embedded server's
	// certificate).
	Dial       func(ctx context.Context, network, addr string) (net.Conn, error)
	RootCAs    *x509.CertPool
	ServerName string
}

// ErrInput is matched (errors.Is) by every error that is the input's fault (the URL, an
// option): exit 2.
var ErrInput = errors.New("bad input")

// inputError is an error of the input, matching ErrInput.
type inputError struct{ msg string }

func (e inputError) Error() string        { return e.msg }
func (e inputError) Is(target error) bool { return target == ErrInput }

func badInput(format string, args ...any) error { return inputError{fmt.Sprintf(format, args...)} }

func (o Options) withDefaults() Options {
	def := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&o.MaxIdle, DefaultMaxIdle)
	def(&o.Resolution, DefaultResolution)
	def(&o.Budget, DefaultBudget)
	def(&o.RequestTimeout, DefaultRequestTimeout)
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.Method == "" {
		o.Method = "GET"
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{KeepAlive: -1}).DialContext // no TCP keepalive probes: they would keep a middlebox's flow
	}
	return o
}

// target is the URL, checked.
type target struct {
	addr, host, path string // dial address, Host header, request target
	tls              bool
	serverName       string
}

// parseTarget checks the URL as a scenario's server.url is checked (engine/realserver):
// http or https, no credentials or fragment, and loopback unless allowRemote.
func parseTarget(raw string, allowRemote bool) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, badInput("%q is not a URL: %v", raw, err)
	}
	var t target
	switch u.Scheme {
	case "http":
	case "https":
		t.tls = true
	default:
		return target{}, badInput("%q: the scheme must be http or https", raw)
	}
	if u.User != nil || u.Fragment != "" || u.Host == "" {
		return target{}, badInput("%q: give scheme://host:port/path, without credentials or a fragment", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[bool]string{false: "80", true: "443"}[t.tls]
	}
	if t.addr, err = loopback.Check(net.JoinHostPort(u.Hostname(), port), allowRemote); err != nil {
		return target{}, badInput("%q is not on loopback; kalab probe sends traffic off the machine only with --allow-remote", raw)
	}
	t.host, t.serverName = u.Host, u.Hostname()
	t.path = u.EscapedPath()
	if t.path == "" {
		t.path = "/"
	}
	if u.RawQuery != "" {
		t.path += "?" + u.RawQuery
	}
	return t, nil
}

// prober holds one probe's state: the budgets spent and the samples taken.
type prober struct {
	opt      Options
	t        target
	tlsConf  *tls.Config
	mu       sync.Mutex
	conns    int
	requests int
	connects []time.Duration // TCP connect times
	hands    []time.Duration // TLS handshake times
	warm     []time.Duration // requests after the first on one connection: round trips on a warm connection
	resumed  int             // connections after the first whose TLS session resumed
	tlsConns int
}

var errConnBudget = errors.New("connection budget spent")

// Run probes the server at opt.URL. The error is ErrInput-wrapped for bad input; any other
// error means the server could not be measured at all (its first request failed).
func Run(ctx context.Context, opt Options) (*Result, error) {
	opt = opt.withDefaults()
	if opt.Method != "GET" && opt.Method != "HEAD" {
		return nil, badInput("method %q: the probe sends GET or HEAD only", opt.Method)
	}
	t, err := parseTarget(opt.URL, opt.AllowRemote)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opt.Budget)
	defer cancel()
	p := &prober{opt: opt, t: t}
	if t.tls {
		name := opt.ServerName
		if name == "" {
			name = t.serverName
		}
		p.tlsConf = &tls.Config{ServerName: name, RootCAs: opt.RootCAs, NextProtos: []string{"http/1.1"},
			ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	}
	r := &Result{URL: opt.URL, Host: t.serverName, Addr: t.addr, Start: start, Method: opt.Method, Options: opt}
	if err := p.first(ctx, r); err != nil {
		return nil, fmt.Errorf("cannot measure %s: %w", opt.URL, err)
	}
	if r.CloseOnFirst {
		// Nothing stays open to time or count.
		r.Requests = Requests{Found: true, Max: 1, Sent: 1, How: "response 1 said Connection: close"}
	} else {
		var wg sync.WaitGroup
		wg.Go(func() { r.Requests = p.requestsPerConn(ctx) })
		h2ctx, h2stop := context.WithCancel(ctx)
		defer h2stop()
		if t.tls {
			wg.Go(func() { r.H2 = p.h2Probe(h2ctx) })
			wg.Go(func() { r.H2Streams = p.h2Streams(ctx) })
		}
		if alt := r.H3.AltSvc; alt != "" {
			wg.Go(func() { r.H3 = p.h3Probe(ctx, alt) })
		}
		r.Idle = p.idle(ctx)
		if r.Idle.Found {
			// HTTP/2's idle close is usually HTTP/1.1's (nginx's keepalive_timeout, Go's
			// IdleTimeout, whose GOAWAY Go follows with the close 1 s later: goAwayTimeout
			// in net/http's h2_bundle.go): wait for it up to twice that and 2 s more, not
			// MaxIdle; a close later still is reported as not seen, above the wait.
			defer time.AfterFunc(2*r.Idle.High+2*time.Second, h2stop).Stop()
		}
		wg.Wait()
	}
	p.mu.Lock()
	r.ConnectRTT, r.RTTSamples = median(p.connects), len(p.connects)
	if len(p.warm) > 0 {
		r.RequestRTT = slices.Min(p.warm)
	}
	// A proxy or balancer in front accepts the TCP connection itself, so a connect can
	// take less than the round trip to the server; a request on a warm connection takes
	// at least one round trip to whoever answers. The larger is the path's round trip.
	r.RTT = max(r.ConnectRTT, r.RequestRTT)
	r.Handshake = median(p.hands)
	r.Resumed, r.TLSConns = p.resumed, p.tlsConns
	r.Conns, r.Sent = p.conns, p.requests
	p.mu.Unlock()
	r.Elapsed = time.Since(start)
	r.BudgetSpent = errors.Is(ctx.Err(), context.DeadlineExceeded)
	return r, nil
}

// first sends the first request: the status, the server's name, the protocol, the hint
// and the TLS version come from its answer.
func (p *prober) first(ctx context.Context, r *Result) error {
	c, err := p.dial(ctx)
	if err != nil {
		return err
	}
	defer c.close()
	resp, err := p.roundTrip(c)
	if err != nil {
		return fmt.Errorf("the first request: %w", err)
	}
	r.Status, r.Proto, r.Server = resp.status, resp.proto, resp.server
	r.Hint = parseHint(resp.keepAlive)
	r.H3.AltSvc = resp.altSvc
	r.CloseOnFirst = resp.close
	if c.tls != nil {
		r.TLSVersion = tls.VersionName(c.tls.Version)
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

var errMoot = errors.New("moot: a shorter gap already failed")
