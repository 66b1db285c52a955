package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/client/wire"
	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/loopback"
)

// Implementation names accepted in Config.Implementation.
const (
	ImplModel     = "model"       // kalab's own HTTP/1.1 pool: every behaviour explicit
	ImplGoNetHTTP = "go-net-http" // the real net/http.Transport, traced
)

// Hint parser names accepted in Config.HintParser.
const (
	HintNode   = "node"   // Node's http.Agent: anchored ^timeout=(\d+), min with the agent timeout
	HintUndici = "undici" // undici (fetch): unanchored timeout=(\d+), replaces the idle timeout, capped by HintMax
)

// Scheduling names accepted in Config.Scheduling.
const (
	LIFO = "lifo" // reuse the most recently freed idle connection
	FIFO = "fifo" // reuse the least recently freed idle connection
	// Creation is undici's Pool: a request goes to the first free client in creation order,
	// a client whose connection closed keeps its place and reconnects there, and a client
	// comes free one event-loop tick after its response ended, so the next request of an
	// awaited loop finds it busy (see creation.go).
	Creation = "creation-order"
)

// Config is a resolved client profile: a scenario's client block after its preset is applied.
// The zero value of every field means the behaviour documented on it.
type Config struct {
	Implementation string // "model" (default) or "go-net-http"
	Addr           string // host:port to dial; the host must be localhost or a loopback IP
	// Handshake, when set, is called right after a TCP connect of c that started at start,
	// and returns once the simulated link's SYN-ACK would be back (netsim.Proxy.Handshake):
	// the client then books the simulated handshake as connect time, as a real client over
	// a real link would, instead of finding it as delay on its first bytes. An error (the
	// server behind the link refused the connection: ECONNREFUSED) fails the connect.
	Handshake func(ctx context.Context, start time.Time, c net.Conn) error
	// Dial, when set, connects instead of a net.Dialer: the in-memory network of a run on
	// the virtual clock. TCPKeepAlive does not apply to what it returns.
	Dial              func(ctx context.Context, network, addr string) (net.Conn, error)
	TLS               bool              // speak HTTPS
	RootCAs           *x509.CertPool    // CAs trusted for the server certificate; nil = system pool
	ServerName        string            // TLS SNI and verified name; default: the host of Addr
	TLSVersion        uint16            // tls.VersionTLS12 or tls.VersionTLS13 to pin it; 0 = let the handshake choose (TLS 1.3)
	SessionResumption bool              // keep a TLS session cache so new connections may resume
	KeyShares         []tls.CurveID     // the key exchanges the ClientHello offers, in order; nil = X25519 alone (CurvePreferences)
	HTTP2             bool              // h2 via ALPN (TLS) or h2c prior knowledge (plain), standard library
	HTTP2NoResend     bool              // fail a stream the server did not process (above a GOAWAY's last stream id) instead of re-sending it
	Method            string            // default GET
	BodyBytes         int               // request body size; sent with Content-Length by every method that has one
	Path              string            // default "/"
	Headers           map[string]string // extra request headers, e.g. Idempotency-Key
	KeepAlive         bool              // reuse connections; false sends Connection: close and closes after each response
	KeepAliveHeader   bool              // with KeepAlive, send "Connection: keep-alive" on HTTP/1.1 requests (Node, undici, requests)
	IdleTimeout       time.Duration     // 0 = none; the clock starts when the response's last byte arrived
	HonorHint         bool              // read the server's Keep-Alive: timeout=N hint
	HintParser        string            // "node" (default) or "undici"; see HintNode and HintUndici
	HintBuffer        time.Duration     // pooled lifetime = hint - buffer; a result <= 0 means the connection is not pooled
	HintMax           time.Duration     // undici's keepAliveMaxTimeout: cap on a hint-derived lifetime; 0 = no cap
	HintUnit          time.Duration     // what one hinted second lasts; 0 = 1s (the runner scales it with the time scale)
	MaxConns          int               // connections per host; 0 = unlimited; excess requests wait in a FIFO queue
	MaxIdle           int               // idle connections kept; 0 = unlimited (the go-default preset sets 2)
	// ConnIDs, when set, numbers the client's connections from a counter it shares with
	// other clients, so that clients of one run (a replay's pools, one per recorded
	// client) never give two connections the same id; nil numbers them from 1.
	ConnIDs         *atomic.Uint64
	Scheduling      string        // "lifo" (default), "fifo" or "creation-order"
	CallerYields    bool          // with creation-order: the caller yields an event-loop tick between requests, so the connection its previous request used is free again
	DropEmptyPool   bool          // with creation-order: undici 7's Agent closes the pool when the origin's count of connections falls to 0 (engine/client/undiciagent)
	LivenessCheck   bool          // a non-blocking peek before reuse; an idle connection that is readable (FIN, RST, stray bytes) is discarded
	LivenessEOFOnly bool          // with LivenessCheck: discard only on EOF or a socket error; pending bytes count as alive (libcurl 7.88.x)
	Timeout         time.Duration // per attempt, from its start to the response's last byte; 0 = none
	// TCPKeepAlive is the kernel's keepalive on each connection the client dials; Enable
	// false sends no probes (not Go's 15 s default: a client models its runtime's).
	TCPKeepAlive net.KeepAliveConfig
	Retry        RetryPolicy // visible retries; each attempt is counted in Event.Attempts
}

// RetryPolicy says when the client re-sends a failed request itself. Every re-send is
// visible: it adds one to Event.Attempts and to Stats.Retries.
type RetryPolicy struct {
	Attempts       int          // extra attempts after the first; 0 = none
	On             []ErrorClass // classes that may be retried
	IdempotentOnly bool         // only GET HEAD OPTIONS TRACE, or a request with an Idempotency-Key header
	ReusedOnly     bool         // retry only when the failed attempt was on a reused connection
	ZeroBytesOnly  bool         // curl: re-send only if a reused connection died before any response byte
	Hidden         bool         // the re-send is the library's own (libcurl): counted in Stats.HiddenRetries and Event.HiddenRetries, not Retries or Attempts
}

// New builds the client the Config names. It validates the Config and returns an error
// describing the first bad field; it never dials.
func New(cfg Config) (Client, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	if cfg.Implementation == ImplGoNetHTTP || cfg.HTTP2 {
		// HTTP/2 is the standard library's in both implementations.
		return newStdClient(cfg), nil
	}
	return newModel(cfg), nil
}

// normalized fills defaults and rejects what cannot run.
func (c Config) normalized() (Config, error) {
	switch c.Implementation {
	case "":
		c.Implementation = ImplModel
	case ImplModel, ImplGoNetHTTP:
	default:
		return c, fmt.Errorf("implementation %q: want %q or %q", c.Implementation, ImplModel, ImplGoNetHTTP)
	}
	c, err := c.normalizedRequest()
	if err != nil {
		return c, err
	}
	return c.normalizedPolicy()
}

// normalizedRequest fills and checks what goes on the wire: the address, server name,
// method, body, path and headers.
func (c Config) normalizedRequest() (Config, error) {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c, fmt.Errorf("addr %q: %w", c.Addr, err)
	}
	if !loopback.IsLoopback(host) {
		return c, fmt.Errorf("addr %q: kalab only dials loopback addresses", c.Addr)
	}
	if c.ServerName == "" {
		c.ServerName = host
	}
	if c.Method == "" {
		c.Method = "GET"
	}
	if !wire.IsToken(c.Method) {
		return c, fmt.Errorf("method %q: not an HTTP token", c.Method)
	}
	if c.BodyBytes < 0 || c.BodyBytes > maxRequestBody {
		return c, fmt.Errorf("body bytes %d: must be 0-%d", c.BodyBytes, maxRequestBody)
	}
	if c.BodyBytes > 0 && (c.Method == "HEAD" || c.Method == "TRACE") {
		return c, fmt.Errorf("method %s with %d body bytes: a %s request has no body", c.Method, c.BodyBytes, c.Method)
	}
	if c.Path == "" {
		c.Path = "/"
	}
	if !strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, " \r\n\t") {
		return c, fmt.Errorf("path %q: want an origin-form path starting with / and without spaces", c.Path)
	}
	for k, v := range c.Headers {
		if !wire.IsToken(k) {
			return c, fmt.Errorf("header name %q: not an HTTP token", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return c, fmt.Errorf("header %q: value contains a line break", k)
		}
	}
	return c, nil
}

// normalizedPolicy fills and checks how connections are used: TLS version, hint parser,
// scheduling, limits, what net/http and HTTP/2 cannot do, and the retry classes.
func (c Config) normalizedPolicy() (Config, error) {
	c, err := c.normalizedModes()
	if err != nil {
		return c, err
	}
	if err := c.checkNonNegative(); err != nil {
		return c, err
	}
	if err := c.checkStdlibSupport(); err != nil {
		return c, err
	}
	return c, c.checkRetryClasses()
}

// normalizedModes checks the TLS version and fills and checks the hint parser and the
// scheduling.
func (c Config) normalizedModes() (Config, error) {
	switch c.TLSVersion {
	case 0, tls.VersionTLS12, tls.VersionTLS13:
	default:
		return c, fmt.Errorf("tls version %#x: want TLS 1.2 or 1.3", c.TLSVersion)
	}
	switch c.HintParser {
	case "":
		c.HintParser = HintNode
	case HintNode, HintUndici:
	default:
		return c, fmt.Errorf("hint parser %q: want %q or %q", c.HintParser, HintNode, HintUndici)
	}
	if fault.On(fault.TCPKeepaliveDropped) {
		c.TCPKeepAlive = net.KeepAliveConfig{}
	}
	switch c.Scheduling {
	case "":
		c.Scheduling = LIFO
	case LIFO, FIFO:
	case Creation:
		if fault.On(fault.UndiciAsNode) {
			c.Scheduling = LIFO // Node's agent: the most recent free socket, given back at once
		}
	default:
		return c, fmt.Errorf("scheduling %q: want %q, %q or %q", c.Scheduling, LIFO, FIFO, Creation)
	}
	return c, nil
}

// checkNonNegative rejects negative durations, connection limits and retry attempts.
func (c Config) checkNonNegative() error {
	if c.IdleTimeout < 0 || c.Timeout < 0 || c.HintMax < 0 || c.HintUnit < 0 {
		return errors.New("idle timeout, timeout and hint max must not be negative")
	}
	if c.MaxConns < 0 || c.MaxIdle < 0 || c.Retry.Attempts < 0 {
		return errors.New("max conns, max idle and retry attempts must not be negative")
	}
	return nil
}

// checkStdlibSupport rejects, for net/http and for HTTP/2, the settings the standard
// library cannot honour; it expects the scheduling already filled in.
func (c Config) checkStdlibSupport() error {
	if c.Implementation != ImplGoNetHTTP && !c.HTTP2 {
		return nil
	}
	// The standard library cannot do these; refusing beats silently measuring something else.
	switch {
	case c.HonorHint:
		return errors.New("honor hint: net/http does not read the Keep-Alive hint (golang/go#15508), and HTTP/2 has none")
	case c.LivenessCheck:
		return errors.New("liveness check: not available with net/http")
	case c.Scheduling != LIFO:
		return fmt.Errorf("scheduling %s: net/http always reuses the most recently used idle connection", c.Scheduling)
	}
	return nil
}

// checkRetryClasses rejects a retry class that is not one of Classes.
func (c Config) checkRetryClasses() error {
	for _, cl := range c.Retry.On {
		if !validClass(cl) {
			return fmt.Errorf("retry on %q: unknown error class", cl)
		}
	}
	return nil
}

func validClass(cl ErrorClass) bool {
	for _, k := range Classes {
		if k == cl {
			return true
		}
	}
	return false
}

// idempotent reports whether a failed request may be re-sent under RetryPolicy.IdempotentOnly
// (Idempotent).
func (c Config) idempotent() bool { return Idempotent(c.Method, c.Headers) }

// Idempotent reports whether a request may be re-sent under RetryPolicy.IdempotentOnly:
// the RFC 9110 safe-and-idempotent methods Go's Transport replays, or an idempotency key
// (Go accepts both spellings, so kalab does too).
func Idempotent(method string, headers map[string]string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	for k := range headers {
		if strings.EqualFold(k, "Idempotency-Key") || strings.EqualFold(k, "X-Idempotency-Key") {
			return true
		}
	}
	return false
}

// sortedHeaderKeys gives a stable header order so requests are byte-for-byte reproducible.
func (c Config) sortedHeaderKeys() []string {
	keys := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// KeyShareX25519 is the key exchange kalab's clients offer unless a scenario asks for
// Go's default: X25519 alone. Go 1.24+ offers X25519MLKEM768 first, whose ML-KEM half is
// about a third of a handshake's CPU (files 01, 06 and 11 on the virtual clock: 1.1-1.3 s
// of user CPU with it, 0.74-0.81 s without) and changes no count: which group a handshake
// agrees on moves its bytes (1,222 up, 1,088 down), not its round trips.
var KeyShareX25519 = []tls.CurveID{tls.X25519}

// KeyShareGoDefault is Go's own default offer (crypto/tls defaultCurvePreferences, Go
// 1.24+): the hybrid X25519MLKEM768 first, X25519 beside it.
var KeyShareGoDefault = []tls.CurveID{tls.X25519MLKEM768, tls.X25519}

// CurvePreferences is what a tls.Config of kalab's clients sets for shares: X25519 alone
// when nil.
func CurvePreferences(shares []tls.CurveID) []tls.CurveID {
	if shares == nil {
		return KeyShareX25519
	}
	return shares
}

func (c Config) tlsConfig() *tls.Config {
	tc := &tls.Config{
		RootCAs:          c.RootCAs,
		ServerName:       c.ServerName,
		MinVersion:       tls.VersionTLS12,
		CurvePreferences: CurvePreferences(c.KeyShares),
	}
	if c.TLSVersion != 0 {
		tc.MinVersion, tc.MaxVersion = c.TLSVersion, c.TLSVersion
	}
	if (c.SessionResumption && !fault.On(fault.TLSResumptionDropped)) || fault.On(fault.TLSResumptionForced) {
		tc.ClientSessionCache = tls.NewLRUClientSessionCache(0)
	}
	return tc
}

// dialer is the net.Dialer a kalab client connects with: TCP keepalive as configured, and
// none otherwise.
func dialer(cfg Config) *net.Dialer {
	return &net.Dialer{KeepAlive: -1, KeepAliveConfig: cfg.TCPKeepAlive}
}

// keepAlive sets a connection's kernel keepalive where the dial function that made it
// did not (an in-memory connection takes it as a socket does).
func keepAlive(nc net.Conn, ka net.KeepAliveConfig) {
	if k, ok := nc.(interface {
		SetKeepAliveConfig(net.KeepAliveConfig) error
	}); ok && ka.Enable {
		_ = k.SetKeepAliveConfig(ka)
	}
}

// dial connects to cfg.Addr: through cfg.Dial when set, else a net.Dialer bounded by
// deadline (zero: none).
func dial(ctx context.Context, cfg Config, deadline time.Time) (net.Conn, error) {
	if cfg.Dial != nil {
		if !deadline.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
		nc, err := cfg.Dial(ctx, "tcp", cfg.Addr)
		if err != nil {
			return nil, err
		}
		keepAlive(nc, cfg.TCPKeepAlive)
		return nc, nil
	}
	d := dialer(cfg)
	d.Deadline = deadline
	return d.DialContext(ctx, "tcp", cfg.Addr)
}
