package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/loopback"
)

// HintMode says whether and how the server sends a "Keep-Alive" response header on
// HTTP/1.1 responses that keep the connection open.
type HintMode int

const (
	// HintOff sends no Keep-Alive header, as nginx, Go and AWS ALB do by default.
	HintOff HintMode = iota
	// HintOn sends "timeout=N" with N = floor(IdleTimeout / 1s), the way Node derives it
	// from keepAliveTimeout; nothing is sent when IdleTimeout is 0 (Node sends nothing
	// when keepAliveTimeout is 0).
	HintOn
	// HintDuration sends "timeout=N" with N = floor(HintDuration / 1s), independent of the
	// real idle close (Node's hint says 5 while the socket really closes at 6 s).
	HintDuration
	// HintRaw sends HintRaw verbatim, so a scenario can test clients against any value.
	HintRaw
)

// String names the mode as scenario files spell it.
func (m HintMode) String() string {
	switch m {
	case HintOff:
		return "off"
	case HintOn:
		return "on"
	case HintDuration:
		return "duration"
	case HintRaw:
		return "raw"
	}
	return "HintMode(" + strconv.Itoa(int(m)) + ")"
}

// Config is everything a run sets on the embedded server. The zero value is a plain
// HTTP/1.1 server on 127.0.0.1 that never closes idle connections and answers 200 with
// an empty body.
type Config struct {
	// TLS serves HTTPS with an ECDSA P-256 certificate made in memory at Start.
	TLS bool
	// TLSVersion pins the protocol: tls.VersionTLS13 (the default when 0) or
	// tls.VersionTLS12.
	TLSVersion uint16
	// Ed25519Cert makes the in-memory certificate Ed25519 instead of ECDSA P-256: fixed
	// 64-byte signatures, so every handshake carries the same bytes (the virtual clock's
	// runs, whose every figure repeats exactly).
	Ed25519Cert bool
	// SessionTickets lets clients resume sessions; resumptions are counted in Stats.
	SessionTickets bool
	// HTTP2 offers h2 by ALPN over TLS, or accepts h2c with prior knowledge over plain
	// TCP. HTTP/1.1 stays available either way.
	HTTP2 bool
	// IdleTimeout is how long after its last response an idle connection is closed;
	// 0 never closes idle connections.
	IdleTimeout time.Duration
	// Hint selects the Keep-Alive response header; see HintMode.
	Hint HintMode
	// HintDuration is the advertised timeout when Hint is HintDuration.
	HintDuration time.Duration
	// HintRaw is the header value sent verbatim when Hint is HintRaw.
	HintRaw string
	// HintOnlyIfAsked sends the hint only when the request carried
	// "Connection: keep-alive", as Apache httpd does.
	HintOnlyIfAsked bool
	// HintCountdown makes the hint's max= the number of requests the connection will still
	// take after this response (MaxRequests - n), as Apache httpd's ap_set_keepalive does,
	// instead of repeating MaxRequests (Node).
	HintCountdown bool
	// MaxRequests caps requests per connection (0 = unlimited). It adds "max=N" to a
	// timeout hint, and the last allowed response carries "Connection: close".
	MaxRequests int
	// CloseEvery puts "Connection: close" on every N-th HTTP/1.1 response the server
	// sends, counted across all connections; 0 turns it off.
	CloseEvery int
	// Status is the response status code; 0 means 200.
	Status int
	// BodyBytes is the number of body bytes actually written in each response.
	BodyBytes int
	// MaxConcurrentStreams is the HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS the server
	// advertises; 0 keeps net/http's default (250). A Go client opens another connection
	// when a burst exceeds it.
	MaxConcurrentStreams int
	// Delay is how long the handler waits before responding.
	Delay time.Duration
	// Stamp adds the response headers ConnHeader (the connection's id, 1-based in
	// accept order) and ConnRequestHeader (the request's 1-based index on that
	// connection), so that a client kalab cannot trace (a real program) still yields
	// connection truth: a request with index > 1 went out on a reused connection.
	Stamp bool
	// OnRequest, when set, is called for every request that reaches the handler, with
	// the connection id and the request's index on it (as Stamp writes them). It runs
	// on the request's goroutine and must be quick and safe for concurrent use.
	OnRequest func(r *http.Request, conn, n int64)
	// Listen is the address to bind, "127.0.0.1:0" when empty. Only loopback addresses
	// are accepted: kalab never listens beyond the machine.
	Listen string
	// Listener, when set, is where the server accepts instead of binding Listen: an
	// in-memory listener of a run on the virtual clock.
	Listener net.Listener
	// Relisten, when set, binds the listener again after a restart's gap, on the address
	// the first one had (the in-memory network's Listen on the virtual clock); when nil
	// net.Listen binds it on loopback.
	Relisten func(addr string) (net.Listener, error)
	// Lag, when set, receives how late each idle close happened after IdleTimeout (over
	// HTTP/2, after IdleTimeout and GoAwayGrace).
	Lag *lag.Recorder
	// GoAwayGrace is how long after the GOAWAY of an idle HTTP/2 connection its close is
	// due as the scenario sees it: net/http's second at the run's time scale; 0 is the
	// second itself. net/http waits a real second whatever the scale, so at a time scale
	// under 1 the close is late by the difference, and the Lag says so.
	GoAwayGrace time.Duration
	// Sleep, when set, waits until at or returns false once done closes; it makes the
	// HTTP/1.1 idle close precise. net/http's own idle close is a read deadline, a Go
	// timer, which on Linux fires up to about a millisecond late when the process is idle
	// (its netpoller waits in whole milliseconds); at a time scale of 0.02 that is 50 ms of
	// scenario time. With Sleep the server closes a connection still idle at exactly
	// IdleTimeout itself; net/http's deadline stays as the backstop. The runner passes
	// the precise clock of the simulated link (engine/netsim/clock's Sleeper).
	Sleep func(at time.Time, done <-chan struct{}) bool
	// Wait, when set, is how a response waits out Delay: until at, or false once done
	// closes. A run on the virtual clock passes its network's order (vnet.Network.Sleep),
	// so that the responses of requests that arrived at one instant are written in the
	// order the requests arrived, not in the order Go's scheduler wakes their handlers.
	// When nil a Go timer waits.
	Wait func(at time.Time, done <-chan struct{}) bool
	// Step, when set, runs f now as one step of the run's order of same-instant events: a
	// run on the virtual clock passes its network's (vnet.Network.At), so that closes the
	// server makes at one instant are seen one after another in a fixed order. When nil f
	// runs at once.
	Step func(f func())
	// Events are the reloads, drains, restarts and deregistrations the server goes through
	// during the run.
	Events []Event
	// OnDeregister, when set, is called as a deregistration (EventDeregister) fires, before
	// the new target takes a connection: the balancer in front stops using the old
	// target's connections then.
	OnDeregister func()
}

// maxBodyBytes bounds the body allocated at Start, so a typo cannot exhaust memory.
const maxBodyBytes = 64 << 20

// normalized returns cfg with defaults filled in, or an error naming the bad field.
func (cfg Config) normalized() (Config, error) {
	cfg, err := cfg.normalizedConn()
	if err != nil {
		return cfg, err
	}
	if err := cfg.checkHint(); err != nil {
		return cfg, err
	}
	if err := cfg.checkConnLimits(); err != nil {
		return cfg, err
	}
	if err := cfg.checkEvents(); err != nil {
		return cfg, err
	}
	cfg, err = cfg.normalizedResponse()
	if err != nil {
		return cfg, err
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if err := checkLoopback(cfg.Listen); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// normalizedConn fills in and checks the TLS version, and checks the idle timeout, which
// the IdleCloseDouble fault doubles.
func (cfg Config) normalizedConn() (Config, error) {
	if cfg.TLSVersion == 0 {
		cfg.TLSVersion = tls.VersionTLS13
	}
	if cfg.TLSVersion != tls.VersionTLS13 && cfg.TLSVersion != tls.VersionTLS12 {
		return cfg, fmt.Errorf("tls version %#x: only TLS 1.2 (0x0303) and 1.3 (0x0304) are supported", cfg.TLSVersion)
	}
	if cfg.IdleTimeout < 0 {
		return cfg, fmt.Errorf("idle timeout %v: must not be negative", cfg.IdleTimeout)
	}
	if fault.On(fault.IdleCloseDouble) {
		cfg.IdleTimeout *= 2
	}
	return cfg, nil
}

// checkHint rejects an unknown hint mode and a bad value for the mode chosen.
func (cfg Config) checkHint() error {
	switch cfg.Hint {
	case HintOff, HintOn:
	case HintDuration:
		if cfg.HintDuration < 0 {
			return fmt.Errorf("hint duration %v: must not be negative", cfg.HintDuration)
		}
	case HintRaw:
		if !validHeaderValue(cfg.HintRaw) {
			return fmt.Errorf("raw hint %q: not a valid header value", cfg.HintRaw)
		}
	default:
		return fmt.Errorf("hint mode %d: unknown", int(cfg.Hint))
	}
	return nil
}

// checkConnLimits rejects a negative cap on requests per connection or close interval.
func (cfg Config) checkConnLimits() error {
	if cfg.MaxRequests < 0 {
		return fmt.Errorf("max requests %d: must not be negative", cfg.MaxRequests)
	}
	if cfg.CloseEvery < 0 {
		return fmt.Errorf("close every %d: must not be negative", cfg.CloseEvery)
	}
	return nil
}

// normalizedResponse fills in and checks the status, then checks the HTTP/2 stream limit,
// the body size (and that the status allows a body) and the delay.
func (cfg Config) normalizedResponse() (Config, error) {
	if cfg.Status == 0 {
		cfg.Status = 200
	}
	if cfg.Status < 200 || cfg.Status > 599 {
		return cfg, fmt.Errorf("status %d: must be 200-599", cfg.Status)
	}
	if cfg.MaxConcurrentStreams < 0 {
		return cfg, fmt.Errorf("max concurrent streams %d: must not be negative", cfg.MaxConcurrentStreams)
	}
	if cfg.BodyBytes < 0 || cfg.BodyBytes > maxBodyBytes {
		return cfg, fmt.Errorf("body bytes %d: must be 0-%d", cfg.BodyBytes, maxBodyBytes)
	}
	if cfg.BodyBytes > 0 && (cfg.Status == 204 || cfg.Status == 304) {
		return cfg, fmt.Errorf("status %d with %d body bytes: this status has no body", cfg.Status, cfg.BodyBytes)
	}
	if cfg.Delay < 0 {
		return cfg, fmt.Errorf("delay %v: must not be negative", cfg.Delay)
	}
	return cfg, nil
}

// checkLoopback accepts only literal loopback IPs (or "localhost", mapped to
// 127.0.0.1 by the caller's resolver) so nothing ever listens on a real interface.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("listen address %q: port %q is not a number 0-65535", addr, port)
	}
	if _, err := loopback.Check(addr, false); err != nil || strings.EqualFold(host, "localhost") {
		return fmt.Errorf("listen address %q: %w", addr, ErrNotLoopback)
	}
	return nil
}

// ErrNotLoopback is returned by Start when Listen names anything but a loopback IP.
var ErrNotLoopback = loopback.ErrNotLoopback

// validHeaderValue rejects control characters (CR, LF, NUL...) that would let a raw
// hint split the response.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
