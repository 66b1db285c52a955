// Package oracle predicts the counts a run reports (errors, connections, reused requests,
// retries, hidden re-sends, 502s) from its plan alone: the seeded pauses, the round trips,
// the idle timeouts and the clients', servers' and balancers' declared rules. It opens no
// socket; a run records its prediction beside what it measured.
package oracle

import "time"

// Plan is what the oracle reads of a run, in scenario time (before any time scale). The
// runner fills it from the scenario's resolved settings; nothing here knows the file.
type Plan struct {
	Requests    int
	Concurrency int // requests in flight; 0 or 1 is sequential
	Burst       int // requests per burst; 0 is one burst
	// Pauses are the seeded pauses between bursts, as the load package draws them.
	Pauses []time.Duration
	// OpenModel is true when requests arrive at a rate rather than one after another.
	OpenModel bool
	RTT       time.Duration
	Jitter    time.Duration
	// InitialWindow is the link's TCP initial congestion window in segments (0: 10), and
	// Bandwidth its limit each way in bits per second (0: none). Together with the bodies
	// they decide whether a request takes one round trip.
	InitialWindow int
	Bandwidth     int64
	Server        Server
	Client        Client
	// Balancer, when set, stands between client and server (RTT is then the client's link).
	Balancer *Balancer
	// Backlog is true when the run models a listen queue (accept delays, overflows).
	Backlog bool
	// Middlebox is a box on the client's path that forgets idle flows; nil when there is
	// none.
	Middlebox *Middlebox
	// Chain, when the path holds more than one box, is every box in path order from the
	// client (Middlebox is its first); nil for one box or none.
	Chain []*Middlebox
	// Replay names a recording the run replays (load.replay); "" for a schedule. The
	// oracle does not predict from a recording's gaps.
	Replay string
	// HTTP3 is a run over QUIC (server.http: "3"), QUIC its idle timeouts and path.
	HTTP3 bool
	QUIC  QUIC
}

// Middlebox is a box next to the client that forgets a flow after IdleTimeout without a
// segment either way (data, or the client's TCP keepalive probes and their answers).
type Middlebox struct {
	Name        string
	IdleTimeout time.Duration
	// Poll is how late after the timeout the box may notice it: it checks its flows once
	// per Poll.
	Poll time.Duration
	// Drop: the box drops the forgotten flow's later segments (a request hangs until the
	// client's timeout). ResetNext: it answers the client's next segment with a reset.
	// Neither (a reset at the expiry itself) is not modelled.
	Drop, ResetNext bool
}

// Server is the server's declared behaviour.
type Server struct {
	// Real names a real server program (nginx, node, a command, a URL); the oracle models
	// only the embedded server, whose rules are the settings below.
	Real        string
	HTTP2       bool
	IdleTimeout time.Duration // 0: never closes an idle connection
	// Hint is the Keep-Alive timeout the server announces; HasHint false: none.
	Hint        time.Duration
	HasHint     bool
	MaxRequests int           // per connection; 0 unlimited
	CloseEvery  int           // closes every Nth connection abruptly; 0 never
	Events      int           // reloads, drains and restarts during the run (server.events)
	Status      int           // the status every response carries
	Delay       time.Duration // how long the server waits before it answers
	BodyBytes   int           // the response body
	// TLS is the server's TLS version ("1.2" or "1.3"), "" for plain TCP. SessionTickets
	// lets a client resume a session (in TLS 1.2 an abbreviated, one-round-trip handshake).
	TLS            string
	SessionTickets bool
}

// Client is the client profile's declared rules.
type Client struct {
	// Real names a real client program (client.exec); its rules are its own, not the plan's.
	Real string
	// GoTransport is the go-net-http implementation: Go's net/http.Transport, which re-sends
	// a replayable request that failed on a reused connection (transport.go
	// shouldRetryRequest, request.go isReplayable).
	GoTransport bool
	KeepAlive   bool
	IdleTimeout time.Duration // 0: none; the clock starts when a response arrives
	HonorHint   bool
	HintParser  string // node | undici
	HintBuffer  time.Duration
	HintMax     time.Duration
	MaxIdle     int // idle connections kept; 0 unlimited
	MaxConns    int // connections per host; 0 unlimited
	// LivenessCheck drops a pooled connection whose peer's FIN has arrived before reusing it.
	LivenessCheck bool
	// AwaitedCreationOrder is undici's pool (first free client in creation order, a
	// connection free again one tick after its response) driven by an awaited loop: the
	// next request takes another connection (engine/client creation.go).
	AwaitedCreationOrder bool
	// DropEmptyPool is undici 7's Agent, which closes the origin's pool when its count of
	// connections falls to zero: the same counts as undici 6's pool unless the server closes
	// kept connections (max_requests), which is not walked (unmodelled).
	DropEmptyPool bool
	// SessionResumption: the client offers the TLS session a server's ticket gave it.
	SessionResumption bool
	Method            string
	BodyBytes         int
	// IdempotencyKey: the requests carry an Idempotency-Key (or X-Idempotency-Key) header,
	// which makes any method replayable for Go's Transport.
	IdempotencyKey bool
	// Timeout is the client's per-request timeout; 0 none.
	Timeout time.Duration
	Retry   Retry
	// KeepaliveIdle and KeepaliveInterval are the kernel's TCP keepalive on the client's
	// sockets (0: no probes): the first probe after KeepaliveIdle without data, then one
	// every KeepaliveInterval.
	KeepaliveIdle, KeepaliveInterval time.Duration
}

// Retry is the client's retry rule.
type Retry struct {
	Attempts       int
	On             []string // error classes: reset, eof, ...
	IdempotentOnly bool
	ReusedOnly     bool
	ZeroBytesOnly  bool
	Hidden         bool // counted as hidden_retries rather than retries
}

// Balancer is the balancer's declared behaviour.
type Balancer struct {
	IdleTimeout      time.Duration // closes an idle client-facing connection
	BackendRTT       time.Duration
	BackendJitter    time.Duration
	BackendKeepAlive bool
	BackendIdle      time.Duration // drops an idle backend connection
	// BackendLiveness drops a backend connection whose FIN arrived before reusing it.
	BackendLiveness bool
	// OnBackendError: error (answer ErrorStatus), retry_idempotent (re-send an idempotent
	// request on a new connection, else answer ErrorStatus) or close.
	OnBackendError string
	Retries        int
	ErrorStatus    int
	Reuse          string
	// Name names the balancer: its preset, or its place on the path.
	Name string
	// Real is the program a real balancer runs (balancer.exec), "" for kalab's own.
	Real string
	// Chain, for a chain of balancers, is each one in path order (the fields above are
	// then the first one's). Predict walks a chain as one balancer: the one whose backend
	// link may close (reduceChain).
	Chain []Balancer
	// Set by reduceChain: the link the walk follows ends at another balancer, whose idle
	// timeout closes it (nextIdle), rather than at the server; via is the round trips in
	// front of that link between the first balancer and it; others is how many other
	// links the chain has, each one connection for the whole run.
	toBalancer bool
	nextIdle   time.Duration
	viaRTT     time.Duration
	others     int
}

// real is the program of the first real balancer of b (or of its chain), "" when every one
// is kalab's own.
func (b *Balancer) real() string {
	if b == nil {
		return ""
	}
	for _, t := range b.Chain {
		if t.Real != "" {
			return t.Real
		}
	}
	return b.Real
}

// via is the round trip every request and response crosses between the first balancer and
// the one whose backend link the walk follows (0 for one balancer).
func (b *Balancer) via() time.Duration {
	if b == nil {
		return 0
	}
	return b.viaRTT
}

// idempotent is RFC 9110 §9.2.2's list of idempotent methods.
func idempotent(method string) bool {
	switch method {
	case "", "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// replayable is Go's request.go isReplayable for kalab's requests, whose body (if any) can
// be read again (GetBody): a GET, HEAD, OPTIONS or TRACE, or any method sent with an
// Idempotency-Key or X-Idempotency-Key header.
func replayable(method string, idempotencyKey bool) bool {
	switch method {
	case "", "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return idempotencyKey
}
