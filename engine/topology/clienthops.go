package topology

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/h3"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// clientHop is the hop that sends the run's requests: it starts last, in front of the
// path, and drives the load through it.
type clientHop interface {
	Hop
	drive(ctx context.Context, rc *recorder) error
}

// goClient is a client in kalab's process: the model client, Go's Transport, or the
// caller's own Go client (go-func). It runs the load schedule itself.
type goClient struct {
	st       scenario.Settings
	scale    shape.Scale
	topo     *topology
	build    func(client.Config) (client.Client, error)
	schedule *lag.Recorder
	caller   bool // the caller's client (go-func): its own counts are not kalab's
	cl       client.Client
	impl     string // the implementation the client was built with
	version  string // kalab's
	stats    client.Stats
	why      map[uint64]string // why the client closed the connections it closed itself, once closed
	quic     *h3.ClientQUICStats
}

func (g *goClient) Role() string { return "client" }

func (g *goClient) Start(_ context.Context, next string) (string, error) {
	ccfg, err := g.config(next)
	if err != nil {
		return "", err
	}
	cl, err := g.build(ccfg)
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	g.cl, g.impl = cl, string(ccfg.Implementation)
	return "", nil
}

// config is the client's config in front of next: the profile, the server's trust and
// name, and the link's handshake.
func (g *goClient) config(next string) (client.Config, error) {
	ep := g.topo.server.endpoint()
	ccfg := configure.Client(g.st, g.scale, next, ep.roots, ep.serverName)
	if ep.tls != nil {
		ccfg.TLS = *ep.tls
	}
	if ep.path != "" {
		ccfg.Path = ep.path
	}
	if l := g.topo.frontLink(); l != nil {
		ccfg.Handshake = l.handshake
	}
	if n := g.topo.net; n != nil {
		ccfg.Dial = n.DialContext
		if l := g.topo.frontLink(); l != nil {
			ccfg.Dial = l.dialer() // the link's listen queue drops SYNs the client's kernel retries
		}
	}
	ka, err := configure.TCPKeepalive(g.st, g.scale)
	if err != nil {
		return ccfg, err
	}
	ccfg.TCPKeepAlive = ka
	return ccfg, nil
}

func (g *goClient) Identity() Identity {
	if g.caller {
		return Identity{Kind: "go-func", Name: "caller"}
	}
	return Identity{Kind: g.impl, Name: "kalab", Version: g.version, Verified: true}
}

func (g *goClient) Timing() map[string]*lag.Recorder {
	return map[string]*lag.Recorder{judge.SrcSchedule: g.schedule}
}

// Close closes the client (its goodbyes reach the server and the links) and keeps its
// final counters.
func (g *goClient) Close() error {
	if g.cl == nil {
		return nil
	}
	err := g.cl.Close()
	if r, ok := g.cl.(client.CloseReasoner); ok {
		g.why = r.CloseReasons()
	}
	if q, ok := g.cl.(interface{ QUIC() h3.ClientQUICStats }); ok {
		qs := q.QUIC()
		g.quic = &qs
	}
	g.stats, g.cl = g.cl.Stats(), nil
	return err
}

// closeReasons says why the client closed each connection it closed itself, by client
// connection id; nil for a client that cannot say.
func (g *goClient) closeReasons() map[uint64]string { return g.why }

func (g *goClient) Stats() Stats {
	return clientStats{Connections: g.stats.Connections, HiddenRetries: g.stats.HiddenRetries, trusted: !g.caller, quic: g.quic,
		handshakes: g.stats.TLSHandshakes, resumed: g.stats.TLSResumed}
}

func (g *goClient) drive(ctx context.Context, rc *recorder) error {
	spec := configure.Load(g.st, g.scale)
	spec.Lag = g.schedule
	spec.Sleep, spec.Start = g.topo.sleep(), g.topo.launch // a burst's calls one at a time, in seq order
	cl := g.cl
	return load.Run(ctx, spec, func(ctx context.Context, seq int) {
		if load.Follows(ctx) {
			ctx = client.Following(ctx) // an awaited loop's next request (undici's pool reads it)
		}
		ev := cl.Do(ctx, seq)
		if !ev.OK() && ctx.Err() != nil {
			return // cut short by an interrupt or the deadline: not a result of the scenario
		}
		planned, ok := load.Scheduled(ctx)
		rc.record(ev, rc.tm.QueueWait(planned, ok, ev.Start))
	})
}

// clientStats are a client's own counters. A client kalab did not write (the caller's, a
// real program) is not trusted for its connection count: the edge takes it from the hop
// the client dials.
type clientStats struct {
	Connections, HiddenRetries int64
	trusted                    bool
	quic                       *h3.ClientQUICStats // an HTTP/3 client's own counters; nil over TCP
	handshakes, resumed        int64               // the client's own TLS handshakes (QUIC's are TLS's)
}

func (c clientStats) Flatten(into map[string]float64) {
	into["connections"] = float64(c.Connections)
	into["hidden_retries"] = float64(max(c.HiddenRetries, int64(into["hidden_retries"])))
	if q := c.quic; q != nil {
		into["client_idle_timeouts"] = float64(q.IdleTimeouts)
		into["pings_sent"] = float64(q.PingsSent)
		into["zero_rtt_rejected"] = float64(q.ZeroRTTRejected)
		into["tls_handshakes"] = float64(c.handshakes)
		into["tls_resumed"] = float64(c.resumed)
		return
	}
	if _, counted := into["tls_handshakes"]; !counted && c.trusted {
		// Over TCP the server counts the handshakes (the server's stats come first); a real
		// server does not tell kalab, and then kalab's own client does.
		into["tls_handshakes"] = float64(c.handshakes)
		into["tls_resumed"] = float64(c.resumed)
	}
}

// programClient is a real client program (client.exec) that keeps its own schedule.
// Connection truth for a program kalab cannot trace comes from the server's log.
type programClient struct {
	x       *Exec
	st      scenario.Settings
	srvLog  *serverLog
	topo    *topology
	logFile func() (*os.File, string, error)
	warn    func(error)
	url     string
	file    *os.File
	rc      *recorder
}

func (p *programClient) Role() string { return "client" }

func (p *programClient) Start(_ context.Context, next string) (string, error) {
	p.url = configure.ExecURL(p.st, next)
	// The program's logs are kept beside its requests.
	f, rel, err := p.logFile()
	if err != nil {
		p.warn(err)
		return "", nil
	}
	p.file, p.x.Config.Stderr, p.x.stderr = f, f, rel
	return "", nil
}

func (p *programClient) Identity() Identity {
	return Identity{Kind: "exec", Name: p.x.ID.Adapter, Program: p.x.ID.Executable, Version: p.x.ID.Version}
}

func (p *programClient) Timing() map[string]*lag.Recorder { return nil }

func (p *programClient) Close() error {
	if p.file == nil {
		return nil
	}
	f := p.file
	p.file = nil
	return f.Close()
}

func (p *programClient) drive(ctx context.Context, rc *recorder) error {
	p.rc = rc
	return runExec(ctx, p.x, p.url, p.topo.server.endpoint().caPEM, func(ev client.Event) { rc.record(ev, time.Time{}) })
}

func (p *programClient) Stats() Stats {
	s := programStats{}
	if p.rc == nil {
		return s
	}
	requests := p.rc.requests
	s.HiddenRetries = p.srvLog.hiddenResends(int(p.rc.answered.Load()))
	if !p.rc.sawConn.Load() {
		// The program did not echo the stamped headers: reuse as the server saw it.
		s.ServerReused, s.requests = p.srvLog.reused, requests
	}
	s.CPUUsPerRequest, s.PeakRSSMB = p.x.usage(requests)
	return s
}

// reportError says why the program's report cannot be believed: it claims more answered
// requests than reached the server (every answer comes from the server, which counts what
// it received); nil when it can.
func (p *programClient) reportError() error {
	if p.rc == nil || p.srvLog == nil {
		return nil
	}
	if answered, seen := int(p.rc.answered.Load()), p.srvLog.seen(); answered > seen {
		return fmt.Errorf("the client program reported %d answered requests, but %d reached the server: its report does not match what happened", answered, seen)
	}
	return nil
}

// programStats are what kalab measured of a real client program.
type programStats struct {
	HiddenRetries   int
	ServerReused    int // requests the server saw on a reused connection, when the program did not echo
	requests        int // > 0 when ServerReused stands for the program's reuse
	CPUUsPerRequest float64
	PeakRSSMB       float64
}

func (s programStats) Flatten(into map[string]float64) {
	into["hidden_retries"] = float64(s.HiddenRetries) + silentResends(into)
	if s.requests > 0 {
		into["reused_requests"] = float64(s.ServerReused)
		into["reuse_ratio"] = float64(s.ServerReused) / float64(s.requests)
	}
	into["cpu_us_per_request"], into["peak_rss_mb"] = s.CPUUsPerRequest, s.PeakRSSMB
}

// silentResends is how many of the failed attempts the proxy saw (requests written into a
// connection the server had closed, which never reached it) the program did not account
// for: each such attempt either surfaces as an error of a dying connection (reset, eof),
// or is a retry the program reported, or the program sent the request again on another
// connection without saying so. The link's stats come before the client's, so into holds
// them. A request that reached the server and was sent again is the server log's count,
// not one of these.
func silentResends(into map[string]float64) float64 {
	surfaced := into["errors_by_class.reset"] + into["errors_by_class.eof"] + into["retries"]
	return max(0, into["failed_attempts"]-surfaced)
}
