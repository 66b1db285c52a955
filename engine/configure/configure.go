// Package configure translates a run's settings into the configuration of each part that
// runs it: the embedded server or a real one, the client, the links, the balancer, a
// middlebox, the load schedule, a real client program, and the run's deadline. It starts
// nothing; the topology builds its hops from what it returns.
package configure

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/balancer"
	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/shape"
)

func TLSVersion(v scenario.Version) uint16 {
	if v == "1.2" {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

func Server(st scenario.Settings, sc shape.Scale) server.Config {
	s := st.Server
	cfg := server.Config{
		TLS:            s.TLS,
		TLSVersion:     TLSVersion(s.TLSVersion),
		SessionTickets: s.SessionTickets,
		HTTP2:          s.HTTP == "2",
		IdleTimeout:    sc.D(s.IdleTimeout),
		// net/http's GOAWAY grace as the scenario sees it: a second of scenario time.
		GoAwayGrace:          sc.D(scenario.Duration(time.Second)),
		HintOnlyIfAsked:      s.HintOnlyIfAsked,
		HintCountdown:        s.HintCountdown,
		MaxRequests:          s.MaxRequests,
		CloseEvery:           s.CloseEvery,
		MaxConcurrentStreams: s.HTTP2MaxStreams,
		Status:               s.Response.Status,
		BodyBytes:            s.Response.BodyBytes,
		Delay:                sc.D(s.Response.Delay),
	}
	for _, e := range s.Events {
		grace := e.Grace
		if b := st.ServerBalancer(); e.Do == scenario.EventDeregister && b != nil {
			grace = b.DeregistrationDelay // how long the old target keeps its connections
		}
		cfg.Events = append(cfg.Events, server.Event{Kind: e.Do, At: sc.D(e.At),
			AfterRequests: int64(e.AfterRequests), Grace: sc.D(grace), Gap: sc.D(e.Gap)})
	}
	// The hint is written in scenario seconds whatever the time scale, so that a client
	// reads the same "timeout=N" at every scale; the client scales N back (hintUnit).
	switch s.KeepaliveHint.Mode {
	case scenario.HintOn:
		if s.IdleTimeout > 0 {
			cfg.Hint, cfg.HintDuration = server.HintDuration, s.IdleTimeout.D()
		}
	case scenario.HintDuration:
		cfg.Hint, cfg.HintDuration = server.HintDuration, s.KeepaliveHint.Duration.D()
	case scenario.HintRaw:
		cfg.Hint, cfg.HintRaw = server.HintRaw, s.KeepaliveHint.Raw
	}
	return cfg
}

// KeyShares is the key exchange offer of client.tls_key_share: nil (X25519 alone) for
// "x25519" or unset, Go's own default for "x25519mlkem768".
func KeyShares(share string) []tls.CurveID {
	if share == scenario.KeyShareGoDefault {
		return client.KeyShareGoDefault
	}
	return nil
}

func Client(st scenario.Settings, sc shape.Scale, addr string, roots *x509.CertPool, serverName string) client.Config {
	c := st.Client
	on := make([]client.ErrorClass, len(c.Retry.On))
	for i, class := range c.Retry.On {
		on[i] = client.ErrorClass(class)
	}
	cfg := client.Config{
		Implementation:    c.Implementation,
		Addr:              addr,
		TLS:               st.Server.TLS,
		RootCAs:           roots,
		ServerName:        serverName,
		SessionResumption: c.SessionResumption,
		KeyShares:         KeyShares(c.TLSKeyShare),
		HTTP2:             shape.HTTP2(st),
		HTTP2NoResend:     c.HTTP2GoAway == "fail",
		KeepAliveHeader:   c.KeepAliveHeader,
		Method:            c.Method,
		BodyBytes:         c.BodyBytes,
		Path:              c.Path,
		Headers:           c.Headers,
		KeepAlive:         c.KeepAlive,
		IdleTimeout:       sc.D(c.IdleTimeout),
		HonorHint:         c.HonorHint,
		HintParser:        c.HintParser,
		HintBuffer:        sc.D(c.HintBuffer),
		HintMax:           sc.D(c.HintMax),
		HintUnit:          sc.D(scenario.Duration(time.Second)),
		MaxConns:          c.MaxConns,
		MaxIdle:           c.MaxIdle,
		Scheduling:        c.Scheduling,
		CallerYields:      c.CallerYields,
		DropEmptyPool:     c.DropEmptyPool,
		LivenessCheck:     c.LivenessCheck,
		LivenessEOFOnly:   c.LivenessEOFOnly && !fault.On(fault.PendingInputEverywhere),
		Timeout:           sc.D(c.Timeout),
		Retry: client.RetryPolicy{
			Attempts:       retryAttempts(c.Retry.Attempts, c.Retry.Hidden),
			On:             on,
			IdempotentOnly: c.Retry.IdempotentOnly,
			ReusedOnly:     c.Retry.ReusedOnly,
			ZeroBytesOnly:  c.Retry.ZeroBytesOnly,
			Hidden:         c.Retry.Hidden,
		},
	}
	if cfg.Implementation == "go-net-http" {
		// Go's Transport watches idle connections itself (its background read loop).
		cfg.LivenessCheck = false
	}
	if cfg.HTTP2 {
		// One multiplexed connection: there is no hint to read, no idle connection to choose
		// or to check, whatever the preset says.
		cfg.HonorHint, cfg.LivenessCheck, cfg.Scheduling = false, false, ""
		cfg.HTTP2NoResend = cfg.HTTP2NoResend || fault.On(fault.GoAwayResendDropped)
	}
	return cfg
}

func Link(st scenario.Settings, sc shape.Scale, upstream string) netsim.Config {
	c := netsim.Config{
		Upstream: upstream,
		RTT:      sc.D(st.Network.RTT),
		Jitter:   sc.D(st.Network.Jitter),
		Seed:     st.Load.Seed,
	}
	TCPModel(&c, st.Network, sc)
	c.Backlog = st.Server.Backlog
	c.AcceptDelay = sc.D(st.Server.AcceptDelay)
	c.RefuseOverflow = st.Server.BacklogOverflow == "refuse"
	return c
}

// TCPModel sets the link's sending model: slow start and the bandwidth limit. A time
// scale stretches every duration, so it divides the rate: a transfer takes the same
// share of the run at any scale.
func TCPModel(c *netsim.Config, n scenario.Network, sc shape.Scale) {
	c.InitialWindow = n.InitialWindow
	c.NoSlowStartAfterIdle = !n.SlowStartAfterIdle
	if n.Bandwidth > 0 {
		c.Bandwidth = scaledBandwidth(n.Bandwidth, sc)
		c.BandwidthShared = n.BandwidthShared
	}
}

// scaledBandwidth is a link's rate at the time scale, in bits per second (0: none): a time
// scale stretches every duration, so it divides the rate, and a transfer takes the same
// share of the run at any scale.
func scaledBandwidth(b scenario.Bandwidth, sc shape.Scale) int64 {
	if b <= 0 {
		return 0
	}
	return max(int64(float64(b)/float64(sc)), 1)
}

// BackendLink is the link behind balancer tier (0 the first) of st's balancers: to the
// next balancer, or from the last to the server. Its jitter draws from its own stream of
// the seed, so the links do not jitter in step.
func BackendLink(st scenario.Settings, tier int, sc shape.Scale, upstream string) netsim.Config {
	n := st.Balancers()[tier].BackendNetwork
	c := netsim.Config{
		Upstream: upstream,
		RTT:      sc.D(n.RTT),
		Jitter:   sc.D(n.Jitter),
		Seed:     st.Load.Seed ^ 0x6b616c6162 ^ int64(tier)<<40, // "kalab", and the tier
	}
	TCPModel(&c, n, sc)
	return c
}

// Balancer translates balancer b of a scenario's balancers; addr is what its backend
// pool dials (its backend link, the next balancer, or the server itself).
func Balancer(b *scenario.Balancer, sc shape.Scale, addr string) balancer.Config {
	return balancer.Config{
		IdleTimeout: sc.D(b.IdleTimeout),
		Backend: client.Config{
			Implementation: client.ImplModel,
			Addr:           addr,
			KeepAlive:      b.Backend.KeepAlive,
			IdleTimeout:    sc.D(b.Backend.IdleTimeout),
			MaxIdle:        b.Backend.MaxIdle,
			MaxConns:       b.Backend.MaxConns,
			Scheduling:     b.Backend.Scheduling,
			LivenessCheck:  b.Backend.LivenessCheck,
			Timeout:        sc.D(b.Backend.Timeout),
		},
		OnError:     balancer.Policy(b.OnBackendError),
		Retries:     b.Retries,
		ErrorStatus: b.ErrorStatus,
		Reuse:       balancer.Reuse(b.Reuse),
	}
}

func Load(st scenario.Settings, sc shape.Scale) load.Spec {
	l := st.Load
	return load.Spec{
		Requests:    l.Requests,
		Concurrency: l.Concurrency,
		Burst:       l.Burst,
		PauseMin:    sc.D(l.Pause.Min),
		PauseMax:    sc.D(l.Pause.Max),
		Rate:        l.Rate / float64(sc),
		Poisson:     l.Arrival == "poisson",
		Seed:        l.Seed,
	}
}

// Deadline bounds a run: a generous multiple of what its schedule should take, so a hung
// run ends as an error instead of holding the invocation forever.
//
// The sum is taken in float64 nanoseconds and saturates at the longest Duration: a day-long
// pause times ten thousand bursts must give "no practical Deadline", not a wrapped negative
// one that ends the run at once.
func Deadline(st scenario.Settings, sc shape.Scale) time.Duration {
	l, n := st.Load, st.Load.Requests
	ns := func(d scenario.Duration) float64 { return float64(d) }
	rtt := ns(st.Network.RTT) + 2*ns(st.Network.Jitter)
	if b := st.Balancer; b != nil {
		rtt += ns(b.BackendNetwork.RTT) + 2*ns(b.BackendNetwork.Jitter)
	}
	perRequest := 4*rtt + ns(st.Server.Response.Delay) + float64(20*time.Millisecond)
	// A large body takes slow-start rounds (a window doubling from initial_window
	// segments) and, under a bandwidth limit, its time on the wire.
	body := float64(st.Server.Response.BodyBytes + 1024)
	for w := float64(max(st.Network.InitialWindow, 1) * netsim.MSS); body > w; w *= 2 {
		perRequest += rtt
		body -= w
	}
	if bw := float64(st.Network.Bandwidth); bw > 0 {
		perRequest += float64(st.Server.Response.BodyBytes+1024) * 8 / bw * float64(time.Second)
		if st.Network.BandwidthShared {
			perRequest *= float64(max(l.Concurrency, 1))
		}
	}
	waves := (n + max(l.Concurrency, 1) - 1) / max(l.Concurrency, 1)
	expected := float64(waves) * perRequest
	if l.Burst > 0 {
		expected += float64((n-1)/l.Burst) * ns(l.Pause.Max)
	}
	if l.Rate > 0 {
		expected += float64(n) / l.Rate * float64(time.Second)
	}
	if l.Replay != "" {
		// The requests start at their recorded times: the span bounds the schedule (the
		// sum of every request's cost above stands for the overlap of slow ones).
		expected += float64(l.ReplaySpan)
	}
	d := shape.SatDuration((3*expected + float64(30*time.Second)) * float64(sc))
	if d < 30*time.Second {
		d = 30 * time.Second
	}
	return d
}

// ExecConfig is the exec client's side of a run: the program and its plan. The URL and
// the CA are the topology's, filled in once it is up. Only the client fields the file
// set reach the program (Exec.Fields); keepalive is always said.
func ExecConfig(st scenario.Settings) execclient.Config {
	c, l := st.Client, st.Load
	cfg := execclient.Config{Command: c.Exec.Command, Dir: c.Exec.Dir, Env: st.Env, Version: c.Exec.Version}
	if c.Exec.Adapter != "" {
		cfg.Adapter, _ = execclient.Lookup(c.Exec.Adapter)
	}
	plan := execclient.Plan{
		Method:      c.Method,
		Headers:     c.Headers,
		Requests:    l.Requests,
		Concurrency: max(l.Concurrency, 1),
		Burst:       l.Burst,
		Client:      map[string]any{"keepalive": c.KeepAlive},
	}
	if l.Burst >= l.Requests {
		plan.Burst = 0
	}
	plan.Pauses(load.Pauses(Load(st, 1)))
	for _, f := range c.Exec.Fields {
		if f == "method" || f == "path" || f == "headers" || execclient.Ignored[f] {
			continue
		}
		if key, _, v, ok := c.ClientField(f); ok {
			plan.Client[key] = v
		}
	}
	cfg.Plan = plan
	return cfg
}

// ExecIgnored says which fields written for kalab's own clients an exec run ignored.
func ExecIgnored(st scenario.Settings) string {
	var names []string
	for _, f := range st.Client.Exec.Fields {
		if execclient.Ignored[f] {
			names = append(names, "client."+f)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "exec client: ignored " + strings.Join(names, " and ") + " (they configure kalab's own clients)"
}

// ExecURL is what every request of an exec run asks for: the link's address (the
// server's without one), with the scenario's path.
func ExecURL(st scenario.Settings, target string) string {
	scheme := "http"
	if st.Server.TLS {
		scheme = "https"
	}
	return scheme + "://" + target + st.Client.Path
}

// retryAttempts is client.retry.attempts, or none with the fault HiddenResendDropped where
// the re-sends are the library's own.
func retryAttempts(attempts int, hidden bool) int {
	if hidden && fault.On(fault.HiddenResendDropped) {
		return 0
	}
	return attempts
}
