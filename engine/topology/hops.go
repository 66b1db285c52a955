package topology

import (
	"context"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/balancer"
	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// serverHop is the last hop of a path, with what the client and the run's records need of it.
type serverHop interface {
	Hop
	endpoint() endpoint
	// conns are the run's connection records as the server saw them (or the link in front
	// of a server kalab does not control), in scenario time.
	conns(rc *recorder, loadEnd time.Time) []report.Conn
	// closedAt is when and why the server closed connection id; ok false when it cannot say.
	closedAt(id uint64) (server.ConnRecord, bool)
	record() *report.Server
	// accepted is how many connections reached the server.
	accepted() int64
}

// endpoint is what a client needs to reach the server: whom to trust and what to ask for.
type endpoint struct {
	roots      *x509.CertPool
	serverName string
	caPEM      []byte // the CA a real client program is handed (embedded server only)
	path       string // "" keeps the scenario's
	tls        *bool  // set when the server decides (a URL's scheme)
}

// serverStats are a server's counters.
type serverStats struct {
	Connections, TLSHandshakes, TLSResumed int64
	// IdleCloses are the connections the embedded server closed at its idle timeout, from
	// its own records; own says it kept them (a real server's come from the link in front).
	IdleCloses int64
	own        bool
}

func (s serverStats) Flatten(into map[string]float64) {
	into["server_connections"] = float64(s.Connections)
	if s.own {
		// A real server's handshakes are not kalab's to read: a model client's own count
		// stands for them (clientStats), and nothing counts a real client's.
		into["tls_handshakes"] = float64(s.TLSHandshakes)
		into["tls_resumed"] = float64(s.TLSResumed)
		into["server_idle_closes"] = float64(s.IdleCloses)
	}
}

// embeddedServer is kalab's own HTTP server.
type embeddedServer struct {
	cfg     server.Config
	version string
	net     *vnet.Network // the in-memory network it listens on, on the virtual clock
	srv     *server.Server
}

func (e *embeddedServer) Role() string { return "server" }

func (e *embeddedServer) Start(context.Context, string) (string, error) {
	cfg := e.cfg
	if e.net != nil {
		ln, err := e.net.Listen("")
		if err != nil {
			return "", err
		}
		cfg.Listener, cfg.Sleep = ln, nil                     // idle closes on Go's timers, exact on the virtual clock
		cfg.Relisten = e.relisten                             // a restart's gap ends on the same in-memory port
		cfg.Wait = e.net.Sleep                                // delayed responses in the network's order
		cfg.Step = func(f func()) { e.net.At(time.Now(), f) } // a deregistration's closes too
		cfg.Ed25519Cert = true                                // handshakes of one size: byte counts that repeat
	}
	srv, err := server.Start(cfg)
	if err != nil {
		return "", err
	}
	e.srv = srv
	return srv.Addr(), nil
}

// relisten binds addr again in the in-memory network: the end of a restart's gap.
func (e *embeddedServer) relisten(addr string) (net.Listener, error) {
	l, err := e.net.Listen(addr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (e *embeddedServer) Identity() Identity {
	return Identity{Kind: "embedded", Name: "kalab", Version: e.version, Verified: true}
}

func (e *embeddedServer) Timing() map[string]*lag.Recorder {
	return map[string]*lag.Recorder{judge.SrcIdleClose: e.cfg.Lag}
}

func (e *embeddedServer) Stats() Stats {
	ss := e.srv.Stats()
	out := serverStats{Connections: ss.Connections, TLSHandshakes: ss.TLSHandshakes, TLSResumed: ss.TLSResumed, own: true}
	for _, c := range e.srv.Conns() {
		if c.ClosedBy == server.CloseByServer && c.Reason == server.ReasonIdle {
			out.IdleCloses++
		}
	}
	return out
}

func (e *embeddedServer) Close() error {
	if e.srv == nil {
		return nil
	}
	return e.srv.Close()
}

// eventArmer is a server hop with timed events (server.events at a time): armEvents starts
// them from t0, the start of the run's load.
type eventArmer interface{ armEvents(t0 time.Time) }

func (e *embeddedServer) armEvents(t0 time.Time) { e.srv.ArmEvents(t0) }

func (e *embeddedServer) accepted() int64            { return e.srv.Stats().Connections }
func (e *embeddedServer) open() int64                { return e.srv.Stats().Open }
func (e *embeddedServer) AcceptedFrom(peer int) bool { return e.srv.AcceptedFrom(peer) }
func (e *embeddedServer) record() *report.Server {
	id := e.Identity()
	return &report.Server{Kind: id.Kind, Name: id.Name, Version: id.Version}
}
func (e *embeddedServer) closedAt(id uint64) (server.ConnRecord, bool) { return e.srv.ConnClosed(id) }

func (e *embeddedServer) endpoint() endpoint {
	return endpoint{roots: e.srv.RootCAs(), serverName: e.srv.ServerName(), caPEM: e.srv.CAPEM()}
}

func (e *embeddedServer) conns(rc *recorder, loadEnd time.Time) []report.Conn {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return serverConns(e.srv.Conns(), rc.serverOf, rc.clientWhy, rc.start, loadEnd, float64(rc.scale))
}

// realServer is a real program (nginx, Node, HAProxy, a command) or a URL. Its own
// counters are not kalab's to read: its connections are the links that reached it, from
// the log of the link in front of it.
type realServer struct {
	cfg    realserver.Config
	runDir string
	links  *connLog
	rs     *realserver.Server
	// wait is what the program's threads waited for a core from when it was ready until
	// it is stopped, told to tm (judge.Timers.ServerWait) at Close.
	wait   lag.GroupWait
	tm     *judge.Timers
	events lag.Recorder // how late each timed event (server.events) was signalled
}

func (r *realServer) Role() string { return "server" }

func (r *realServer) Start(ctx context.Context, _ string) (string, error) {
	rs, err := realserver.Start(ctx, r.cfg)
	if err != nil {
		return "", err
	}
	r.rs = rs
	r.wait = lag.StartGroupWait(rs.ProcessGroup())
	return rs.Addr(), nil
}

func (r *realServer) Identity() Identity {
	id := r.rs.Identity()
	program := id.Program
	if program == "" {
		program = id.URL
	}
	return Identity{Kind: string(id.Kind), Name: id.Name, Program: program, Version: id.Version}
}

// Timing names the lateness of the run's timed events (a reload: nginx -s reload), the only
// timers kalab keeps for a real server.
func (r *realServer) Timing() map[string]*lag.Recorder {
	if len(r.cfg.Events) == 0 {
		return nil
	}
	return map[string]*lag.Recorder{judge.SrcIdleClose: &r.events}
}

func (r *realServer) armEvents(t0 time.Time) { r.rs.ArmEvents(t0, &r.events) }

func (r *realServer) Stats() Stats {
	var ss serverStats
	for _, rec := range r.links.all() {
		if rec.Connected > 0 {
			ss.Connections++
		}
	}
	return ss
}

func (r *realServer) Close() error {
	if r.rs == nil {
		return nil
	}
	if own, others, ok := r.wait.Split(); ok && r.tm != nil {
		r.tm.ServerWait = &judge.ProgramWait{Own: own, Neighbours: others}
	}
	return r.rs.Close()
}

func (r *realServer) accepted() int64 { return r.Stats().(serverStats).Connections }

func (r *realServer) closedAt(uint64) (server.ConnRecord, bool) { return server.ConnRecord{}, false }

func (r *realServer) endpoint() endpoint {
	ep := endpoint{roots: r.rs.RootCAs(), serverName: r.rs.ServerName(), path: r.rs.Path()}
	if r.rs.Identity().Kind == realserver.URL {
		tls := strings.HasPrefix(r.cfg.URL, "https://")
		ep.tls = &tls
	}
	return ep
}

func (r *realServer) conns(rc *recorder, loadEnd time.Time) []report.Conn {
	return proxyConns(r.links.all(), rc.start, loadEnd, float64(rc.scale))
}

func (r *realServer) record() *report.Server {
	id := r.rs.Identity()
	out := &report.Server{Kind: string(id.Kind), Name: id.Name, Version: id.Version, Program: id.Program,
		URL: id.URL, ServerHeader: id.ServerHeader}
	for _, l := range r.rs.Logs() {
		if rel, err := filepath.Rel(r.runDir, l); err == nil {
			out.Logs = append(out.Logs, rel)
		}
	}
	return out
}

// link is a netsim latency proxy: the client's link, or the balancer's backend link.
type link struct {
	role    string
	cfg     netsim.Config // Upstream is filled at Start
	scale   float64
	version string        // kalab's
	log     *connLog      // the proxy's connection records, when it keeps them
	net     *vnet.Network // the in-memory network on the virtual clock; nil for loopback sockets
	p       proxy
}

// proxy is a running link: netsim's relay over loopback sockets, or the same model over
// the in-memory network of the virtual clock.
type proxy interface {
	Addr() string
	Handshake(ctx context.Context, start time.Time, local net.Addr) error
	AcceptedFrom(peer int) bool
	Stats() netsim.Stats
	Close() error
}

func (l *link) Role() string { return l.role }

func (l *link) Start(_ context.Context, next string) (string, error) {
	cfg := l.cfg
	cfg.Upstream = next
	if l.log != nil {
		cfg.OnConn = l.log.add
	}
	var p proxy
	var err error
	if l.net != nil {
		p, err = netsim.StartVirtual(cfg, l.net)
	} else {
		p, err = netsim.Start(cfg)
	}
	if err != nil {
		return "", err
	}
	l.p = p
	return p.Addr(), nil
}

func (l *link) Identity() Identity {
	return Identity{Kind: "netsim", Name: "kalab", Version: l.version, Verified: true}
}

func (l *link) Timing() map[string]*lag.Recorder {
	return map[string]*lag.Recorder{judge.SrcLink: l.cfg.Lag}
}

func (l *link) Stats() Stats {
	s := linkStats{backend: l.role == roleBackendLink, Stats: l.p.Stats(), scale: l.scale}
	if l.log != nil {
		s.front, s.records = true, l.log.all()
	}
	return s
}

func (l *link) Close() error {
	if l.p == nil {
		return nil
	}
	return l.p.Close()
}

func (l *link) open() int64                { return l.p.Stats().Open }
func (l *link) AcceptedFrom(peer int) bool { return l.p.AcceptedFrom(peer) }
func (l *link) accepted() int64            { return l.p.Stats().Accepted }

// dialer connects to the link on the virtual clock as the client's kernel would: through
// the link's listen queue, with its SYN retries.
func (l *link) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if vp, ok := l.p.(*netsim.VirtualProxy); ok {
		return vp.DialContext
	}
	return l.net.DialContext
}

// handshake is the simulated SYN/SYN-ACK wait the client calls after each connect of c:
// ECONNREFUSED when the server behind the link refused it.
func (l *link) handshake(ctx context.Context, start time.Time, c net.Conn) error {
	return l.p.Handshake(ctx, start, c.LocalAddr())
}

// finish closes the proxy, which records the links still open as closed at the run's end:
// its records are complete from then on.
func (l *link) finish() {
	if l.log != nil {
		_ = l.p.Close()
	}
}

// linkStats are a link's counters and, for the link in front of the server, its
// connection records (the server's idle closes as the link saw them).
type linkStats struct {
	netsim.Stats
	backend bool
	front   bool // in front of the server: its records are the server's connections
	records []netsim.ConnRecord
	scale   float64
}

func (s linkStats) Flatten(into map[string]float64) {
	if s.backend {
		into["backend_proxy_connections"] = float64(s.Accepted)
		if s.front {
			// In front of a real server: its records are the server's idle closes.
			idleCloseMetrics(into, s.records, s.scale)
		}
		return
	}
	into["proxy_connections"] = float64(s.Accepted)
	into["bytes_up"] = float64(s.BytesUp)
	into["bytes_down"] = float64(s.BytesDown)
	into["listen_overflows"] = float64(s.Overflows)
	if s.front {
		// Behind a balancer this link faces the balancer, not the server: the server's
		// own records count its idle closes (serverStats).
		idleCloseMetrics(into, s.records, s.scale)
	}
}

// balancerPart is a balancer on the path: tier 0 is the one the client meets, the last
// tier the one in front of the server.
type balancerPart struct {
	start   func(next string) (balancerHop, error)
	b       balancerHop
	version string // kalab's
}

func (b *balancerPart) Role() string { return "balancer" }

func (b *balancerPart) Start(_ context.Context, next string) (string, error) {
	bal, err := b.start(next)
	if err != nil {
		return "", err
	}
	b.b = bal
	return bal.Addr(), nil
}

func (b *balancerPart) Identity() Identity {
	return Identity{Kind: "balancer", Name: "kalab", Verified: true}
}

func (b *balancerPart) Timing() map[string]*lag.Recorder { return nil }
func (b *balancerPart) Stats() Stats                     { return balancerStats(b.b.Stats()) }
func (b *balancerPart) open() int64                      { return b.b.Stats().Open }

func (b *balancerPart) Close() error {
	if b.b == nil {
		return nil
	}
	return b.b.Close()
}

// conns are the balancer's records of the client's connections (side "balancer") in
// scenario time. A close by the client after the load ended is the client closing its pool:
// reason end, as the server's records say it.
func (b *balancerPart) conns(start, loadEnd time.Time, scale float64) []report.Conn {
	if b.b == nil {
		return nil
	}
	ms := func(t time.Time) float64 { return max(float64(t.Sub(start))/float64(time.Millisecond)/scale, 0) }
	var out []report.Conn
	for _, c := range b.b.Conns() {
		rc := report.Conn{Side: report.SideBalancer, ID: c.ID, OpenedMs: ms(c.Opened), Requests: c.Requests}
		if !c.Closed.IsZero() {
			at := ms(c.Closed)
			rc.ClosedMs, rc.ClosedBy, rc.Reason = &at, c.ClosedBy, c.Reason
			if c.ClosedBy == balancer.ClosedByClient && c.Reason == balancer.ReasonUnknown && !c.Closed.Before(loadEnd) {
				rc.Reason = balancer.ReasonEnd
			}
		}
		out = append(out, rc)
	}
	return out
}

// balancerStats are the balancer's own counters.
type balancerStats balancer.Stats

// Behind a chain of balancers the flat metrics add the balancers' answers, re-sends and
// backend counts up (a hop's own record starts from nothing, so there each is its
// balancer's alone), except balancer_connections, balancer_requests and balancer_closes:
// the client's connections and requests are the first balancer's, the one the client
// dials (the hops flatten last to first).
func (bs balancerStats) Flatten(flat map[string]float64) {
	if fault.On(fault.ChainCountsFirst) {
		for _, k := range []string{"balancer_errors", "balancer_retries", "backend_connections", "backend_reused_requests", "backend_errors"} {
			delete(flat, k)
		}
	}
	flat["balancer_connections"] = float64(bs.Connections)
	flat["balancer_requests"] = float64(bs.Requests)
	flat["balancer_errors"] += float64(bs.ErrorResponses)
	flat["balancer_closes"] = float64(bs.ClientCloses)
	flat["balancer_retries"] += float64(bs.Retries)
	flat["backend_connections"] += float64(bs.BackendConnections)
	flat["backend_reused_requests"] += float64(bs.BackendReused)
	var failed int64
	for class, n := range bs.BackendErrors {
		flat["backend_errors_by_class."+string(class)] += float64(n)
		failed += n
	}
	flat["backend_errors"] += float64(failed)
}
