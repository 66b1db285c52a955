package topology

import (
	"errors"
	"os"

	"github.com/kalab-dev/kalab/engine/netsim/clock"

	"github.com/kalab-dev/kalab/engine/configure"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// Roles of the built-in hops.
const (
	roleLink        = "link"
	roleBackendLink = "backend_link"
)

// Options are what a run's topology takes from the invocation.
type Options struct {
	KalabVersion  string
	AllowRemote   bool    // a server.url may name a host outside loopback
	SkipRequests  bool    // write no per-request (and per-connection) files
	DeadlineScale float64 // multiplies the run's deadline (tests use < 1); 0 means 1
	Observer      Observer
	// NewClient, when set, builds the run's client instead of the file's client section.
	NewClient func(client.Config) (client.Client, error)
	// Middleboxes are hops a test adds between the link and the server.
	Middleboxes []func() Hop
	// Network is the run's in-memory network on the virtual clock; nil on the real clock.
	Network *vnet.Network
}

// Run is one run's state as Drive and the hop builders share it: the compiled run (its
// scenario, its run, its settings and time scale as they go) and this attempt at it: where
// it reports (its writer, its log, the timers its timing is judged by, the probe of the
// process's CPU and memory) and the real client program it starts.
type Run struct {
	*compile.Run
	W       *report.Writer
	Options Options
	Exec    *Exec // the real client program of this attempt (from compile.Run.Exec); nil for kalab's own client
	Log     zerolog.Logger
	Timers  *judge.Timers
	Probe   *metrics.ProcProbe
}

// Observer hears of each request as it ends (the CLI's progress bars).
type Observer interface {
	RequestDone(r *scenario.Run, ok bool)
}

// buildTopology translates a run's settings into its chain of hops: client, [middlebox,]
// link (when it has something to simulate), [balancer, backend link,] the hops a test
// adds, server.
// Nothing starts here.
func buildTopology(run *Run) (*topology, error) {
	st, scale, opt, tm := run.Settings, run.Scale(), run.Options, run.Timers
	t := &topology{net: opt.Network}
	if st.Server.HTTP3() {
		t.buildH3(st, scale, opt, tm)
		t.client = buildClient(run, t, nil)
		return t, nil
	}
	// The link in front of the server (the client's, or behind a balancer the backend
	// link) keeps its connection records: its upstream side is the server's, its closes are
	// the server's, and for a real server the only connection truth.
	links := &connLog{}
	var frontLog *connLog
	if st.Balancer == nil {
		frontLog = links
	}
	srvLog, err := t.buildServer(run, links)
	if err != nil {
		return nil, err
	}
	// The boxes are where the client's connections leave it, in path order, so that the
	// client's own keepalive probes reach the first box's socket (the only place they can
	// be seen); each box dials the next.
	var box *middleboxHop
	for _, mb := range st.Middleboxes() {
		box = &middleboxHop{cfg: configure.Middlebox(mb, scale), preset: mb.Preset, version: opt.KalabVersion, net: t.net}
		t.path = append(t.path, box)
	}
	// With no link to simulate (rtt and jitter 0) the client dials the embedded server
	// directly: the proxy would add nothing but two descriptors per connection, which is
	// what lets a 5,000-connection burst fit under a 20,000-descriptor limit. A real server
	// always has the proxy: it is where its connections are seen.
	if !shape.Direct(st) {
		front := &link{role: roleLink, cfg: configure.Link(st, scale, ""), log: frontLog, scale: float64(scale), version: opt.KalabVersion, net: t.net}
		front.cfg.Lag = &tm.Link
		if frontLog != nil {
			front.cfg.AllowRemoteUpstream = opt.AllowRemote
		}
		if box != nil && t.net != nil {
			box.next = front
		}
		t.path = append(t.path, front)
	}
	t.path = append(t.path, balancerHops(st, scale, tm, opt.KalabVersion, t.net, links)...)
	for _, mb := range opt.Middleboxes {
		t.path = append(t.path, mb())
	}
	t.path = append(t.path, t.server)
	t.client = buildClient(run, t, srvLog)
	return t, nil
}

// buildServer makes the server hop: the embedded one, or a real program (or URL) the link
// puts in front of. It returns the server's request log for a real client program.
func (t *topology) buildServer(run *Run, links *connLog) (*serverLog, error) {
	st, scale, opt, ex, tm := run.Settings, run.Scale(), run.Options, run.Exec, run.Timers
	if rc, ok := configure.RealServer(st, scale, opt.AllowRemote); ok {
		if ex != nil {
			// Check refuses this at load time; kept here so no path reaches a nil server.
			return nil, errors.New("a real server (server." + string(rc.Kind) + ") runs with kalab's own clients")
		}
		var err error
		if rc.LogDir, err = run.W.Subdir(report.ServerLogsPath(run.Scenario.Name, run.Source.Variant)); err != nil {
			return nil, err
		}
		t.server = &realServer{cfg: rc, runDir: run.W.Dir, links: links, tm: tm}
		return nil, nil
	}
	scfg := configure.Server(st, scale)
	scfg.Lag = &tm.Idle
	scfg.Sleep = clock.Sleep // idle closes land on their instant, not up to 1 ms late
	// The connection id on every response ties the server's close records to the client's
	// connections (the proxy between them gives each side its own ports).
	scfg.Stamp = true
	var srvLog *serverLog
	if ex != nil {
		// Connection truth for a program kalab cannot trace comes from the server.
		srvLog = newServerLog()
		scfg.OnRequest = srvLog.observe
	}
	if st.Balancer != nil {
		scfg.OnDeregister = t.deregistered // server.events deregister: the balancer stops first
	}
	t.server = &embeddedServer{cfg: scfg, version: opt.KalabVersion, net: t.net}
	return srvLog, nil
}

// balancerHops are the balancers in path order, each followed by its backend link (when
// it has something to simulate, or the last one's a real server's connections to see: then
// it keeps them in links).
func balancerHops(st scenario.Settings, scale shape.Scale, tm *judge.Timers, version string, n *vnet.Network, links *connLog) []Hop {
	var hops []Hop
	bs := st.Balancers()
	for i, b := range bs {
		if b.Real() {
			hops = append(hops, &realBalancer{cfg: configure.RealBalancer(b, scale, st.Env)})
		} else {
			hops = append(hops, &balancerPart{version: version,
				start: func(next string) (balancerHop, error) { return startBalancer(b, scale, next, n) }})
		}
		if shape.DirectBehind(st, i) {
			continue
		}
		back := &link{role: roleBackendLink, cfg: configure.BackendLink(st, i, scale, ""), scale: float64(scale), version: version, net: n}
		if i == len(bs)-1 && st.Server.Real() {
			back.log = links
		}
		back.cfg.Lag = &tm.Link
		hops = append(hops, back)
	}
	return hops
}

// buildClient makes the client hop: a real program, or a Go client in kalab's process.
func buildClient(run *Run, t *topology, srvLog *serverLog) clientHop {
	st, scale, opt, ex, tm := run.Settings, run.Scale(), run.Options, run.Exec, run.Timers
	w, name, variant := run.W, run.Scenario.Name, run.Source.Variant
	if ex != nil && ex.Config.Adapter != nil && ex.Config.Adapter.Native {
		return &chromiumClient{x: ex, st: st, scale: scale, topo: t}
	}
	if ex != nil {
		return &programClient{x: ex, st: st, srvLog: srvLog, topo: t,
			logFile: func() (f *os.File, rel string, err error) {
				f, err = w.ClientLog(name, variant)
				return f, report.ClientLogPath(name, variant), err
			},
			warn: func(err error) { run.Log.Warn().Err(err).Msg("the client's standard error is not kept") }}
	}
	build := client.New
	if opt.NewClient != nil {
		build = opt.NewClient
	}
	if st.Server.HTTP3() && opt.NewClient == nil {
		build = t.h3Build(st, scale)
	}
	g := &goClient{st: st, scale: scale, topo: t, build: build, schedule: &tm.Schedule, caller: opt.NewClient != nil, version: opt.KalabVersion}
	if st.Load.Replay != "" {
		return &replayClient{goClient: g}
	}
	return g
}
