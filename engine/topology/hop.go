package topology

import (
	"context"
	"sort"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/clock"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/quicnet"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/topology/internal/reuse"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// Hop is one part of a run's path: the client, a link (the latency proxy), the balancer,
// the balancer's backend link, the server, or a middlebox a test adds. Every hop follows
// the same life: Start under the run's context in front of the address of the hop after it
// (toward the server; "" for the server itself) and return the address the hop before it
// dials; say who it is; say which of the run's timing sources its timers report to; count
// what crossed it in a typed Stats; and on Close stop and clean up everything it started.
// Optional capabilities are extra interfaces (opener, acceptor, connSource, fronter), as a
// toxiproxy toxic's are, so a hop implements only what it has.
type Hop interface {
	// Role is the hop's place in the path: "client", "link", "balancer", "backend_link",
	// "server", or a middlebox's own name.
	Role() string
	Start(ctx context.Context, next string) (addr string, err error)
	Identity() Identity
	// Timing names the lateness recorders the hop's timers report to (by timing source:
	// link, schedule, idle_close), nil when it has no timer of the model's.
	Timing() map[string]*lag.Recorder
	// Stats is what the hop counted; read once, after the load ended.
	Stats() Stats
	Close() error
}

// Identity says who a hop is: its kind ("embedded", "netsim", "balancer", "exec", a real
// server's kind), the program or URL behind it, its version, and whether kalab verified
// that (its own parts, or a program it started and asked).
type Identity struct {
	Kind, Name, Program, Version string
	Verified                     bool
}

// Stats are a hop's typed counters. Flatten writes them under the metric vocabulary's
// names; the runner calls it once per hop, at the record's edge, and nothing else writes
// a hop's figures into the flat metrics.
type Stats interface {
	Flatten(into map[string]float64)
}

// opener is a hop that can say how many connections are still open on its client side.
type opener interface{ open() int64 }

// acceptor is a hop that can tell its own accepted client ports from another run's.
type acceptor interface{ AcceptedFrom(peer int) bool }

// topology is a run's chain of hops: the client, then the path from what the client dials
// to the server. Hops start from the server outwards, each in front of the one after it,
// and stop in the opposite order.
type topology struct {
	client clientHop
	path   []Hop     // path[0] is what the client dials; path[len-1] is the server
	server serverHop // the last hop, with what the client and the records need of it
	addrs  []string
	net    *vnet.Network // the in-memory network of a run on the virtual clock; nil on the real clock
	pnet   quicnet.Net   // an HTTP/3 run's datagram network; nil over TCP
}

// sleep is how the run's own timers wait for an instant: the precise clock of the links on
// the real clock, the in-memory network's order on the virtual one (a step at its exact
// instant, after the events queued before it for that instant; the precise clock's spin
// would never end there).
func (t *topology) sleep() func(at time.Time, done <-chan struct{}) bool {
	if t.net != nil {
		return t.net.Sleep // the network's order: a pause ends after the same-instant events queued before it
	}
	return new(clock.Sleeper).Until
}

// launch runs call on a goroutine of its own; on the virtual clock as a step of the
// network's order, so that calls started at one instant go one at a time in the order they
// were launched, each once what the one before set off has run its course.
func (t *topology) launch(call func()) {
	if t.net == nil {
		go call()
		return
	}
	t.net.At(time.Now(), func() { go call() })
}

// start starts the path from the server to the client's side, then the client; a hop that
// fails stops the start, and close stops what did start.
func (t *topology) start(ctx context.Context) error {
	t.addrs = make([]string, len(t.path))
	next := ""
	for i := len(t.path) - 1; i >= 0; i-- {
		addr, err := t.path[i].Start(ctx, next)
		if err != nil {
			return err
		}
		t.addrs[i], next = addr, addr
	}
	_, err := t.client.Start(ctx, next)
	return err
}

// front is the address the client dials.
func (t *topology) front() string { return t.addrs[0] }

// hops lists every hop, the client first.
func (t *topology) hops() []Hop { return append([]Hop{t.client}, t.path...) }

// closeAll stops every hop, the client first, each error handed to warn. Closing a hop
// that never started does nothing.
func (t *topology) closeAll(warn func(role string, err error)) {
	for _, h := range t.hops() {
		if err := h.Close(); err != nil {
			warn(h.Role(), err)
		}
	}
}

// serverUp reports whether the server started (its record can be read).
func (t *topology) serverUp() bool { return t.addrs != nil && t.addrs[len(t.addrs)-1] != "" }

// finish lets each hop that keeps connection records complete them (a link closes, which
// records the links still open as closed at the run's end).
func (t *topology) finish() {
	for _, h := range t.path {
		if f, ok := h.(interface{ finish() }); ok {
			f.finish()
		}
	}
}

// stats reads every hop's stats once, the client first.
func (t *topology) stats() []Stats {
	hops := t.hops()
	out := make([]Stats, len(hops))
	for i, h := range hops {
		out[i] = h.Stats()
	}
	return out
}

// acceptedAtFront is how many connections the link the client dials accepted, or the
// server when the client dials it directly (through a balancer: the server behind it).
func (t *topology) acceptedAtFront() int64 {
	if l := t.frontLink(); l != nil {
		return l.accepted()
	}
	return t.server.accepted()
}

// reuseFacts gathers the figures the reuse invariants compare.
func (t *topology) reuseFacts(flat map[string]float64, conns []report.Conn) reuse.Facts {
	f := reuse.Facts{Requests: int64(flat["requests"]), Reused: int64(flat["reused_requests"]),
		Connections: int64(flat["connections"]), ServerConnections: int64(flat["server_connections"]),
		ProxyConnections: -1, PerConn: true}
	if len(t.balancers()) > 0 {
		f.PerConn = false // the client's connections end at the balancer
	}
	if l := t.frontLink(); l != nil && f.PerConn {
		f.ProxyConnections = l.accepted()
	}
	for _, c := range conns {
		if c.Side == "server" {
			f.ServerConns = append(f.ServerConns, c)
		}
	}
	return f
}

// balancers are the run's balancer hops in path order: kalab's own and real programs.
func (t *topology) balancers() []Hop {
	var out []Hop
	for _, h := range t.path {
		switch h.(type) {
		case *balancerPart, *realBalancer:
			out = append(out, h)
		}
	}
	return out
}

// balancer is the balancer the client meets (the first of a chain) when it is kalab's own,
// nil when the run has none or it is a real program.
func (t *topology) balancer() *balancerPart {
	if bs := t.balancers(); len(bs) > 0 {
		b, _ := bs[0].(*balancerPart)
		return b
	}
	return nil
}

// serverBalancer is the balancer in front of the server (the last of a chain) when it is
// kalab's own, nil when the run has none or it is a real program (which the loader keeps
// from a deregistration).
func (t *topology) serverBalancer() *balancerPart {
	if bs := t.balancers(); len(bs) > 0 {
		b, _ := bs[len(bs)-1].(*balancerPart)
		return b
	}
	return nil
}

// deregistered tells the balancer in front of the server that the server is deregistering
// (server.events deregister): it stops sending requests on its backend connections open now.
func (t *topology) deregistered() {
	if b := t.serverBalancer(); b != nil && b.b != nil {
		_ = b.b.Deregister() // fails only for a creation-order pool, which a balancer never has
	}
}

// frontLink is the client's link: the first hop, or the one behind a middlebox (which
// passes each client connection to it as one connection); nil when the client dials
// something else.
func (t *topology) frontLink() *link {
	for _, h := range t.path {
		switch h := h.(type) {
		case *link:
			return h
		case *middleboxHop:
			continue
		}
		return nil
	}
	return nil
}

// stillOpen is how many connections the hop the client dials still has open.
func (t *topology) stillOpen() int64 {
	if o, ok := t.path[0].(opener); ok {
		return o.open()
	}
	return 0
}

// own tells this run's sockets from another's by client port: the front hop's accepted
// ports, or nil when it cannot say.
func (t *topology) own() func(int) bool {
	if a, ok := t.path[0].(acceptor); ok {
		return a.AcceptedFrom
	}
	return nil
}

// records are the hops' identities and stats (read once, by stats) for the run record,
// the client first.
func (t *topology) records(stats []Stats) []report.Hop {
	var out []report.Hop
	for i, h := range t.hops() {
		id := h.Identity()
		flat := map[string]float64{}
		stats[i].Flatten(flat)
		out = append(out, report.Hop{Role: h.Role(), Kind: id.Kind, Name: id.Name, Program: id.Program,
			Version: id.Version, Verified: id.Verified, Timing: timingNames(h), Stats: flat})
	}
	return out
}

// timingNames lists the timing sources a hop reports to, sorted.
func timingNames(h Hop) []string {
	var names []string
	for name := range h.Timing() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// timeWait is, on the virtual clock, how many of the connections the client made to the
// hop it dials were closed first by one of their ends with a FIN: each leaves its closer in
// TIME_WAIT, what the kernel's count reads on the real clock.
func (t *topology) timeWait() int {
	return int(t.net.ActiveClosesAt(t.front()))
}
