package h3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/server"
)

// ZeroRTT modes of ClientConfig.ZeroRTT.
const (
	ZeroRTTOff  = "off"  // every request waits for the handshake
	ZeroRTTSafe = "safe" // GET and HEAD go in 0-RTT on a resumed connection, as browsers send them
	ZeroRTTAll  = "all"  // every method goes in 0-RTT, POST included: the replayable, risky one
)

// ClientConfig is an HTTP/3 client's settings. The zero value of a field means what its
// comment says; Addr and ListenPacket are required.
type ClientConfig struct {
	Addr string // the server's (or the link's) UDP address, an IP and a port
	// ListenPacket opens the socket of one QUIC connection. The client opens one per
	// connection and closes it when the connection ends, so a NAT sees one flow each.
	ListenPacket      func() (net.PacketConn, error)
	ServerName        string         // TLS SNI and verified name; default server.CertName
	RootCAs           *x509.CertPool // CAs trusted for the server's certificate; nil = the system's
	IdleTimeout       time.Duration  // the client's max_idle_timeout; 0 = quic-go's 30 s. The connection uses the smaller of both ends'
	KeepAlivePeriod   time.Duration  // send a PING after this long without receiving; 0 = never
	ZeroRTT           string         // "off" (default), "safe" or "all"
	SessionResumption bool           // share a TLS session cache among the client's connections; 0-RTT needs it
	KeyShares         []tls.CurveID  // the key exchanges the ClientHello offers; nil = X25519 alone (client.CurvePreferences)
	Method            string         // default GET
	Path              string         // default "/"
	BodyBytes         int            // request body size, sent with Content-Length
	Headers           map[string]string
	Timeout           time.Duration      // per attempt, dial included; 0 = none
	Retry             client.RetryPolicy // visible retries, engine/client's rules; Hidden is not supported
	MaxConns          int                // 0 or 1: HTTP/3 multiplexes every request on one connection
	ConnIDs           *atomic.Uint64     // shared connection numbering; nil numbers from 1
}

// ClientQUICStats are the QUIC-level counters of a client.
type ClientQUICStats struct {
	ZeroRTTAttempted int64 // connections on which a request went out before the handshake completed
	ZeroRTTAccepted  int64 // of those, the ones whose handshake confirmed the server accepted the 0-RTT data
	ZeroRTTRejected  int64 // of those, the ones whose 0-RTT data the server rejected (the requests went again)
	IdleTimeouts     int64 // connections this client closed by its idle timer after the handshake
	PingsSent        int64 // PING frames sent outside MTU probes: keep-alives, and loss probes on a lossy link
	PathMigrations   int64 // times a connection's active path switched to a new address pair
}

// Client is an HTTP/3 client: one QUIC connection to its server at a time, every request
// multiplexed on it, a new one dialled when it closed. Its methods are safe for
// concurrent use.
type Client struct {
	cfg      ClientConfig
	addr     *net.UDPAddr
	tlsConf  *tls.Config
	quicConf *quic.Config
	h3       *http3.Transport // builds the connections' http3.ClientConns; dials nothing
	request  []byte           // every request's frames (wire.go)
	idem     bool
	ids      *atomic.Uint64
	ownIDs   atomic.Uint64

	mu      sync.Mutex
	cur     *qconn
	dialing chan struct{} // closed when the dial in progress ended
	dialErr error         // that dial's error, for the requests that waited on it
	conns   []*qconn      // the connections not yet closed, for Close
	traces  []*connTrace  // every connection's, for the stats: all a closed one leaves
	closed  bool

	connections, tlsResumed, retries   atomic.Int64
	zeroAttempted, zeroAcc, zeroReject atomic.Int64
}

var errClosed = errors.New("client closed")

// NewClient checks cfg and builds the client; it dials nothing.
func NewClient(cfg ClientConfig) (*Client, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("h3 client config: %w", err)
	}
	addr, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("h3 client config: addr: %w", err)
	}
	c := &Client{cfg: cfg, addr: addr, h3: &http3.Transport{}}
	c.ids = &c.ownIDs
	if cfg.ConnIDs != nil {
		c.ids = cfg.ConnIDs
	}
	c.tlsConf = &tls.Config{
		ServerName: cfg.ServerName,
		RootCAs:    cfg.RootCAs,
		NextProtos: []string{http3.NextProtoH3},
		MinVersion: tls.VersionTLS13,
		// X25519 alone unless the scenario asks for Go's default, as over TCP.
		CurvePreferences: client.CurvePreferences(cfg.KeyShares),
	}
	if cfg.SessionResumption && !fault.On(fault.TLSResumptionDropped) {
		c.tlsConf.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	}
	c.quicConf = &quic.Config{
		MaxIdleTimeout:     cfg.IdleTimeout,
		KeepAlivePeriod:    cfg.KeepAlivePeriod,
		MaxIncomingStreams: -1, // a server opens no request streams (RFC 9114 6.1)
		Tracer:             tracerFrom,
	}
	authority := cfg.Addr
	for k, v := range cfg.Headers {
		if strings.EqualFold(k, "Host") {
			authority = v
		}
	}
	c.request, err = encodeRequest(cfg.Method, authority, cfg.Path, cfg.Headers, cfg.BodyBytes)
	if err != nil {
		return nil, fmt.Errorf("h3 client config: request: %w", err)
	}
	c.idem = client.Idempotent(cfg.Method, cfg.Headers)
	return c, nil
}

// normalized fills in the defaults and rejects what the client cannot do.
func (cfg ClientConfig) normalized() (ClientConfig, error) {
	switch {
	case cfg.Addr == "":
		return cfg, errors.New("addr: empty")
	case cfg.ListenPacket == nil:
		return cfg, errors.New("listen packet: not set")
	case cfg.IdleTimeout < 0, cfg.KeepAlivePeriod < 0, cfg.Timeout < 0:
		return cfg, errors.New("idle timeout, keep-alive period and timeout must not be negative")
	case cfg.BodyBytes < 0 || cfg.BodyBytes > 64<<20:
		return cfg, fmt.Errorf("body bytes %d: must be 0-%d", cfg.BodyBytes, 64<<20)
	case cfg.MaxConns < 0 || cfg.MaxConns > 1:
		return cfg, fmt.Errorf("max conns %d: HTTP/3 multiplexes on one connection (0 or 1)", cfg.MaxConns)
	case cfg.Retry.Hidden:
		return cfg, errors.New("retry: hidden re-sends are a real library's, not this client's")
	}
	cfg.ZeroRTT = strings.ToLower(cfg.ZeroRTT)
	switch cfg.ZeroRTT {
	case "":
		cfg.ZeroRTT = ZeroRTTOff
	case ZeroRTTOff, ZeroRTTSafe, ZeroRTTAll:
	default:
		return cfg, fmt.Errorf("zero rtt %q: off, safe or all", cfg.ZeroRTT)
	}
	if cfg.ZeroRTT != ZeroRTTOff && !cfg.SessionResumption {
		return cfg, fmt.Errorf("zero rtt %q: needs session resumption (the ticket carries the 0-RTT keys)", cfg.ZeroRTT)
	}
	if cfg.Method == "" {
		cfg.Method = "GET"
	}
	if cfg.Path == "" {
		cfg.Path = "/"
	}
	if cfg.ServerName == "" {
		cfg.ServerName = server.CertName
	}
	return cfg, nil
}

// early reports whether the client's requests may go before the handshake completed.
func (c *Client) early() bool {
	switch c.cfg.ZeroRTT {
	case ZeroRTTAll:
		return true
	case ZeroRTTSafe:
		return c.cfg.Method == "GET" || c.cfg.Method == "HEAD" || fault.On(fault.ZeroRTTAnyMethod)
	}
	return false
}

// conn returns the connection for a request, dialling one when there is none or the last
// one closed; fresh says this call dialled it. Requests that arrive during a dial wait for
// it on a channel (a goroutine blocked on a mutex would stop the virtual clock).
func (c *Client) conn(ctx context.Context) (qc *qconn, fresh bool, err error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, false, errClosed
		}
		if c.cur != nil && c.cur.alive() {
			qc = c.cur
			c.mu.Unlock()
			return qc, false, nil
		}
		if wait := c.dialing; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
			c.mu.Lock()
			err = c.dialErr
			c.mu.Unlock()
			if err != nil {
				return nil, false, err
			}
			continue
		}
		done := make(chan struct{})
		c.dialing, c.cur = done, nil
		c.mu.Unlock()
		qc, err = c.dial(ctx, c.cfg.ZeroRTT != ZeroRTTOff)
		c.mu.Lock()
		c.dialing, c.dialErr = nil, err
		if err == nil {
			c.cur = qc
			c.conns, c.traces = append(c.conns, qc), append(c.traces, qc.trace)
			go c.watch(qc)
		}
		c.mu.Unlock()
		close(done)
		return qc, err == nil, err
	}
}

// Do sends one logical request, with the visible retries of the client's RetryPolicy.
func (c *Client) Do(ctx context.Context, seq int) client.Event {
	start := time.Now()
	ev := client.Event{Seq: seq, Start: start}
	for {
		ev.Attempts++
		r := c.attempt(ctx, start, &ev)
		if !c.cfg.Retry.Retries(c.idem, ev.Attempts, r) {
			break
		}
		c.retries.Add(1)
	}
	ev.Latency = time.Since(start)
	return ev
}
