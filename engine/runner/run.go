package runner

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/lag"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/server"
)

// settings are a run's settings with the invocation's overrides applied, as the run will
// use them: a real program, or the caller's Go client, runs in real time (scale 1).
func settings(r *scenario.Run, opt Options) scenario.Settings {
	st, _, _ := prepare(r, opt)
	return st
}

// prepare applies the invocation's overrides and says how the client runs: notes for the
// record, and the real program when the file names one.
func prepare(r *scenario.Run, opt Options) (scenario.Settings, []string, *execRun) {
	st := r.Settings
	if opt.TimeScale > 0 {
		st.TimeScale = opt.TimeScale
	}
	if opt.Seed != nil {
		st.Load.Seed = *opt.Seed
	}
	var notes []string
	var ex *execRun
	if opt.NewClient != nil {
		st.Client.Exec = nil // the caller's client replaces whatever the file names
		if st.TimeScale != 1 {
			notes = append(notes, fmt.Sprintf("go-func client: ran at time scale 1, not %g (a real client runs in real time)", st.TimeScale))
			st.TimeScale = 1
		}
		notes = append(notes, "go-func client: the caller's Go client; of the file's client section only method, path, headers and timeout apply")
	}
	if st.Client.Exec != nil {
		// A real program runs in real time: an exec run ignores the time scale.
		if st.TimeScale != 1 {
			notes = append(notes, fmt.Sprintf("exec client: ran at time scale 1, not %g (a real client runs in real time)", st.TimeScale))
			st.TimeScale = 1
		}
		ex = &execRun{cfg: execConfig(st)}
		if ignored := execIgnored(st); ignored != "" {
			notes = append(notes, ignored)
		}
	}
	return st, notes, ex
}

// execute performs one run and returns its record; it never returns without one. Its
// timers report to tm, judged by judge.
func execute(ctx context.Context, w *report.Writer, sc *scenario.Scenario, r *scenario.Run, opt Options, tm *timers, judge *timingJudge) *report.Run {
	st, notes, ex := prepare(r, opt)
	scale := scaler(st.TimeScale)
	rec := &report.Run{
		KalabVersion: opt.KalabVersion, RunID: opt.RunID, Scenario: sc.Name, File: sc.File,
		Variant: r.Variant, Matrix: r.Matrix, Params: paramsJSON(st), TimeScale: st.TimeScale,
		Seed: st.Load.Seed, StartedAt: time.Now().UTC(), Checks: []report.Check{}, Notes: notes,
	}
	log := opt.Log.With().Str("scenario", sc.Name).Str("variant", r.Variant).Logger()
	log.Info().Int("requests", st.Load.Requests).Float64("time_scale", st.TimeScale).Msg("run started")
	if opt.Observer != nil {
		opt.Observer.RunStarted(r, st.Load.Requests)
	}
	start := time.Now()
	pressure, cpuWait, sched := lag.StartPressure(), lag.StartCPUWait(), lag.StartSched()
	var m check.Metrics
	var conns connOutcome
	var err error
	if ex != nil {
		ex.id, err = execclient.Identify(ctx, ex.cfg)
		rec.Client = ex.runtimeRecord()
	}
	if err == nil {
		m, conns, err = drive(ctx, w, sc, r, st, scale, opt, ex, log, tm)
		rec.Closes, rec.Server = conns.closes, conns.server
		if ex != nil {
			rec.Client = ex.runtimeRecord()
		}
	}
	notRun := notRunReason(err)
	rec.WallMs = float64(time.Since(start)) / float64(time.Millisecond)
	rec.Metrics = m
	sched.Into(&tm.sched)
	rec.Timing = judgeTiming(tm, judge.after(st, m))
	if share, ok := pressure.Share(); ok {
		v := math.Round(share*1000) / 1000
		rec.Timing.CPUPressure = &v
	}
	if st.Network.RTT > 0 { // a run with an RTT is never direct: its link delays
		rec.Timing.LinkTrips = trips(st)
	}
	if d, ok := cpuWait.Wait(); ok {
		v := math.Round(float64(d)/float64(time.Microsecond)) / 1000
		rec.Timing.CPUWaitMs = &v
	}
	switch {
	case notRun != "" && opt.RequireClients && errors.Is(err, execclient.ErrMissing):
		rec.Status, rec.Error = report.StatusError, notRun+" (--require-clients)"
	case notRun != "":
		markNotRun(rec, notRun, r.Expect)
	case err != nil && ctx.Err() != nil:
		rec.Status, rec.Error = report.StatusInterrupted, "interrupted before the run completed"
	case rec.Timing.Noisy:
		notAResult(rec)
	case err != nil:
		rec.Status, rec.Error = report.StatusError, err.Error()
	default:
		rec.Status = report.StatusPass
		if !opt.SkipRequests {
			rec.RequestsFile = report.RequestsPath(sc.Name, r.Variant)
			if conns.written {
				rec.ConnectionsFile = report.ConnectionsPath(sc.Name, r.Variant)
			}
		}
	}
	if rec.Status == report.StatusPass || rec.Status == report.StatusFail {
		for _, a := range r.Expect {
			res := a.Check(m)
			c := report.Check{Kind: "expect", Expr: a.Source, Pass: res.Pass, Observed: res.Observed, File: a.File, Line: a.Line, Col: a.Col}
			if res.Err != nil {
				c.Error = res.Err.Error()
			}
			if !c.Pass {
				rec.Status = report.StatusFail
			}
			rec.Checks = append(rec.Checks, c)
		}
	}
	if opt.Judge != nil && rec.Status != report.StatusNotRun && !rec.Timing.Noisy {
		opt.Judge(rec)
		if rec.Timing.Noisy {
			// The judge found a verdict the machine's other work could have made (a
			// baseline regression inside what it took from the run).
			notAResult(rec)
		}
	}
	ev := log.Info()
	if rec.Status == report.StatusError {
		ev = log.Error().Str("error", rec.Error)
	}
	if rec.Status == report.StatusNotRun {
		ev = log.Warn().Str("reason", rec.Reason)
	}
	ev.Str("status", rec.Status).Float64("requests", m.Requests).Float64("errors", m.Errors).
		Float64("connections", m.Connections).Float64("wall_s", math.Round(rec.WallMs)/1000).Msg("run ended")
	if opt.Observer != nil {
		opt.Observer.RunEnded(r, rec)
	}
	return rec
}

// notAResult marks a noisy run as one without a verdict: none of its checks stand, so it
// can neither pass nor fail. The scheduler reruns it alone, or ends it as an engine error.
func notAResult(rec *report.Run) {
	rec.Status, rec.Error = report.StatusError, "noisy: "+rec.Timing.Reason
	rec.Checks, rec.Baseline = []report.Check{}, nil
}

// connOutcome is what a run recorded about its connections.
type connOutcome struct {
	closes  map[string]map[string]int // closed_by -> reason -> count
	written bool                      // the connection file was written
	server  *report.Server            // the server the run talked to
}

// drive starts the topology, runs the schedule and gathers the metrics. Components are
// stopped in reverse order whatever happens.
func drive(ctx context.Context, w *report.Writer, sc *scenario.Scenario, r *scenario.Run, st scenario.Settings, scale scaler, opt Options, ex *execRun, log zerolog.Logger, tm *timers) (m check.Metrics, co connOutcome, err error) {
	// A component that does not close cleanly (connections still open after the server's
	// grace period) does not change the run's figures, which are read before: it is a
	// warning in the log, not a dropped error.
	closeWarn := func(what string, c interface{ Close() error }) {
		if err := c.Close(); err != nil {
			log.Warn().Err(err).Str("component", what).Msg("close")
		}
	}
	limit := deadline(st, scale)
	if opt.DeadlineScale > 0 {
		limit = satDuration(float64(limit) * opt.DeadlineScale)
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("the run exceeded its deadline of %v", limit.Round(time.Second)))
	defer cancel()

	// The server: the embedded one, or a real program (or URL) the proxy puts in front of.
	var srv *server.Server
	var real *realserver.Server
	var srvLog *serverLog
	var up interface {
		Addr() string
		RootCAs() *x509.CertPool
		ServerName() string
	}
	if rc, ok := realServerConfig(st, scale, opt.AllowRemote); ok {
		if ex != nil || st.Balancer != nil {
			// Check refuses these at load time; kept here so no path reaches a nil server.
			return m, co, errors.New("a real server (server." + string(rc.Kind) + ") runs with kalab's own clients and no balancer")
		}
		if rc.LogDir, err = w.Subdir(report.ServerLogsPath(sc.Name, r.Variant)); err != nil {
			return m, co, err
		}
		if real, err = realserver.Start(runCtx, rc); err != nil {
			return m, co, err
		}
		defer closeWarn("real server", real)
		up = real
		id := real.Identity()
		co.server = &report.Server{Kind: string(id.Kind), Name: id.Name, Version: id.Version, Program: id.Program,
			URL: id.URL, ServerHeader: id.ServerHeader}
		for _, l := range real.Logs() {
			if rel, err := filepath.Rel(w.Dir, l); err == nil {
				co.server.Logs = append(co.server.Logs, rel)
			}
		}
	} else {
		scfg := serverConfig(st, scale)
		scfg.Lag = &tm.idle
		scfg.Sleep = netsim.Sleep // idle closes land on their instant, not up to 1 ms late
		// The connection id on every response ties the server's close records to the
		// client's connections (the proxy between them gives each side its own ports).
		scfg.Stamp = true
		if ex != nil {
			// Connection truth for a program kalab cannot trace comes from the server.
			srvLog = newServerLog()
			scfg.Stamp, scfg.OnRequest = true, srvLog.observe
		}
		if srv, err = server.Start(scfg); err != nil {
			return m, co, err
		}
		defer closeWarn("server", srv)
		up = srv
		co.server = &report.Server{Kind: "embedded", Name: "kalab", Version: opt.KalabVersion}
	}
	// With no link to simulate (rtt and jitter 0) the client dials the embedded server
	// directly: the proxy would add nothing but two descriptors per connection, which is
	// what lets a 5,000-connection burst fit under a 20,000-descriptor limit. A real server
	// always has the proxy: it is where its connections are seen.
	target := up.Addr()
	// Topology v2: with a balancer the path is client -> link -> balancer -> backend link
	// -> server, each link only when it has something to simulate.
	var bal balancerHop
	var backendProxy *netsim.Proxy
	if st.Balancer != nil {
		if !directBackend(st) {
			bpc := backendProxyConfig(st, scale, target)
			bpc.Lag = &tm.link
			if backendProxy, err = netsim.Start(bpc); err != nil {
				return m, co, err
			}
			defer closeWarn("backend proxy", backendProxy)
			target = backendProxy.Addr()
		}
		if bal, err = startBalancer(st, scale, target); err != nil {
			return m, co, err
		}
		defer closeWarn("balancer", bal)
		target = bal.Addr()
	}
	var proxy *netsim.Proxy
	var proxyLog connLog
	if !direct(st) {
		pc := proxyConfig(st, scale, target)
		if st.Balancer == nil {
			// The proxy's upstream side is the server's: its closes are the server's.
			pc.OnConn, pc.AllowRemoteUpstream = proxyLog.add, opt.AllowRemote
		}
		pc.Lag = &tm.link
		if proxy, err = netsim.Start(pc); err != nil {
			return m, co, err
		}
		defer closeWarn("proxy", proxy)
		target = proxy.Addr()
	}
	var cl client.Client
	if ex == nil {
		newClient := client.New
		if opt.NewClient != nil {
			newClient = opt.NewClient
		}
		ccfg := clientConfig(st, scale, target, up.RootCAs(), up.ServerName())
		if real != nil {
			if real.Identity().Kind == realserver.URL {
				ccfg.TLS = strings.HasPrefix(st.Server.URL, "https://")
			}
			if p := real.Path(); p != "" {
				ccfg.Path = p
			}
		}
		if proxy != nil {
			ccfg.Handshake = proxy.Handshake
		}
		if cl, err = newClient(ccfg); err != nil {
			return m, co, fmt.Errorf("client: %w", err)
		}
	}
	clientOpen := cl != nil
	defer func() {
		if clientOpen {
			closeWarn("client", cl)
		}
	}()

	var reqs *report.RequestWriter
	var reqMu sync.Mutex
	if !opt.SkipRequests {
		if reqs, err = w.Requests(sc.Name, r.Variant); err != nil {
			return m, co, err
		}
	}
	// Which server connection each client connection is, from the Kalab-Conn header of
	// its responses: a failed request learns from it when the server closed its socket.
	serverOf := map[uint64]uint64{}
	agg := metrics.New()
	probe := metrics.StartProcProbe(metrics.DefaultProbeInterval)
	start := time.Now()
	var answered atomic.Int64
	var sawConn atomic.Bool
	var retriedConnects atomic.Int64
	// The client's connect time includes the link's simulated SYN/SYN-ACK (one RTT, real
	// time); a dropped SYN shows as a connect of a second or more (synRetried).
	handshake := scale.d(st.Network.RTT)
	// planned is when the schedule meant the request to start; zero for a real program,
	// which keeps its own schedule.
	record := func(ev client.Event, planned time.Time) {
		if synRetried(ev.Connect, handshake) {
			retriedConnects.Add(1)
		}
		if ev.Status > 0 {
			answered.Add(1)
		}
		if ev.ConnID != 0 {
			sawConn.Store(true)
		}
		agg.Add(ev)
		reqMu.Lock()
		if ev.ServerConn != 0 && ev.ConnID != 0 {
			serverOf[ev.ConnID] = ev.ServerConn
		}
		if reqs != nil {
			rq := requestRecord(ev, start, planned, float64(scale))
			if !ev.OK() && rq.ServerConn == 0 {
				rq.ServerConn = serverOf[ev.ConnID]
			}
			if rq.ServerConn != 0 && !ev.OK() && srv != nil {
				if c, ok := srv.ConnClosed(rq.ServerConn); ok {
					at := max(float64(c.Closed.Sub(start))/float64(time.Millisecond)/float64(scale), 0)
					rq.ServerClosedMs, rq.ServerCloseReason = &at, c.Reason
				}
			}
			reqs.Write(&rq)
		}
		reqMu.Unlock()
		if opt.Observer != nil {
			opt.Observer.RequestDone(r, ev.OK())
		}
	}
	var loadErr error
	if ex != nil {
		// The program's logs are kept beside its requests.
		if f, err := w.ClientLog(sc.Name, r.Variant); err == nil {
			defer closeWarn("client log", f)
			ex.cfg.Stderr, ex.stderr = f, report.ClientLogPath(sc.Name, r.Variant)
		} else {
			log.Warn().Err(err).Msg("the client's standard error is not kept")
		}
		loadErr = runExec(runCtx, ex, execURL(st, target), srv.CAPEM(), func(ev client.Event) { record(ev, time.Time{}) })
	} else {
		spec := loadSpec(st, scale)
		spec.Lag = &tm.schedule
		spec.Sleep = new(netsim.Sleeper).Until
		loadErr = load.Run(runCtx, spec, func(ctx context.Context, seq int) {
			ev := cl.Do(ctx, seq)
			if !ev.OK() && ctx.Err() != nil {
				return // cut short by an interrupt or the deadline: not a result of the scenario
			}
			planned, ok := load.Scheduled(ctx)
			record(ev, tm.queueWait(planned, ok, ev.Start))
		})
	}
	total := time.Since(start)
	loadEnd := time.Now()
	cpu, rss := probe.Stop()
	if reqs != nil {
		if err := reqs.Close(); err != nil && loadErr == nil {
			loadErr = err
		}
	}
	// Close the client first, so the server and proxy counters include its goodbyes, and
	// let the last FINs cross the link before counting what they left in TIME_WAIT. (A
	// program has exited by now.)
	var cs client.Stats
	if cl != nil {
		clientOpen = false
		closeWarn("client", cl)
		cs = cl.Stats()
	}
	settle := time.Now().Add(time.Second + 2*scale.d(st.Network.RTT+st.Network.Jitter))
	stillOpen := func() int64 {
		if proxy == nil && bal != nil {
			return bal.Stats().Open // the client's side ends at the balancer
		}
		return open(srv, proxy)
	}
	for stillOpen() > 0 && time.Now().Before(settle) {
		time.Sleep(5 * time.Millisecond)
	}
	// Only this run's sockets: the link's port and the client ports it accepted.
	var own func(int) bool
	switch {
	case proxy != nil:
		own = proxy.AcceptedFrom
	case srv != nil && st.Balancer == nil:
		own = srv.AcceptedFrom
	}
	timeWait, twErr := metrics.TimeWaitOwn(portOf(target), own)
	var conns []report.Conn
	var proxyRecs []netsim.ConnRecord
	if proxy != nil && st.Balancer == nil {
		// Closing the proxy now records the links still open as closed at the run's end.
		_ = proxy.Close()
		proxyRecs = proxyLog.all()
	}
	if srv != nil {
		reqMu.Lock()
		conns = serverConns(srv.Conns(), serverOf, start, loadEnd, float64(scale))
		reqMu.Unlock()
	} else {
		// A real server: the proxy's upstream side is the only connection truth.
		conns = proxyConns(proxyRecs, start, loadEnd, float64(scale))
	}
	co.closes = closeCounts(conns)
	if !opt.SkipRequests {
		if err := w.WriteConns(sc.Name, r.Variant, conns); err != nil && loadErr == nil {
			loadErr = err
		} else if err == nil {
			co.written = true
		}
	}
	var ss server.Stats
	if srv != nil {
		ss = srv.Stats()
	} else {
		// A real server's own counters are not kalab's to read: its connections are the
		// links that reached it.
		for _, rec := range proxyRecs {
			if rec.Connected > 0 {
				ss.Connections++
			}
		}
	}
	var ps netsim.Stats
	if proxy != nil {
		ps = proxy.Stats()
	}

	summary := agg.Summary(total, float64(scale))
	flat := summary.Flat()
	flat["connections"] = float64(cs.Connections)
	flat["server_connections"] = float64(ss.Connections)
	flat["proxy_connections"] = float64(ps.Accepted)
	flat["bytes_up"] = float64(ps.BytesUp)
	flat["bytes_down"] = float64(ps.BytesDown)
	flat["listen_overflows"] = float64(ps.Overflows)
	flat["syn_retried_connects"] = float64(retriedConnects.Load())
	flat["tls_handshakes"] = float64(ss.TLSHandshakes)
	flat["tls_resumed"] = float64(ss.TLSResumed)
	flat["hidden_retries"] = float64(max(cs.HiddenRetries, int64(flat["hidden_retries"])))
	if bal != nil {
		balancerMetrics(flat, bal, backendProxy)
	}
	if n := summary.Requests; n > 0 {
		flat["cpu_us_per_request"] = float64(cpu.Microseconds()) / float64(n)
	}
	flat["peak_rss_mb"] = float64(rss) / (1 << 20)
	if twErr == nil {
		flat["time_wait"] = float64(timeWait)
	} else {
		log.Debug().Err(twErr).Msg("time_wait not counted")
	}
	idleCloseMetrics(flat, proxyRecs, float64(scale))
	if ex != nil || opt.NewClient != nil {
		// What kalab controls counts, not what the client says: the connections it opened
		// are those the link (or the server, without a link) accepted.
		flat["connections"] = float64(ps.Accepted)
		if proxy == nil {
			flat["connections"] = float64(ss.Connections)
		}
	}
	if ex != nil {
		flat["hidden_retries"] = float64(srvLog.hiddenResends(int(answered.Load())))
		if !sawConn.Load() {
			// The program did not echo the stamped headers: reuse as the server saw it.
			flat["reused_requests"] = float64(srvLog.reused)
			if n := summary.Requests; n > 0 {
				flat["reuse_ratio"] = float64(srvLog.reused) / float64(n)
			}
		}
		flat["cpu_us_per_request"], flat["peak_rss_mb"] = ex.usage(int(summary.Requests))
	}
	tm.addMetrics(flat, float64(scale))
	m = check.FromFlat(flat)
	if loadErr != nil {
		if cause := context.Cause(runCtx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
			return m, co, cause
		}
		return m, co, loadErr
	}
	return m, co, nil
}

// balancerMetrics adds the second hop's figures: the balancer's own counters and the
// accepted connections of its backend link (nil when the hop has no link).
func balancerMetrics(flat map[string]float64, bal balancerHop, backendProxy *netsim.Proxy) {
	bs := bal.Stats()
	flat["balancer_connections"] = float64(bs.Connections)
	flat["balancer_requests"] = float64(bs.Requests)
	flat["balancer_errors"] = float64(bs.ErrorResponses)
	flat["balancer_closes"] = float64(bs.ClientCloses)
	flat["balancer_retries"] = float64(bs.Retries)
	flat["backend_connections"] = float64(bs.BackendConnections)
	flat["backend_reused_requests"] = float64(bs.BackendReused)
	var failed int64
	for class, n := range bs.BackendErrors {
		flat["backend_errors_by_class."+string(class)] = float64(n)
		failed += n
	}
	flat["backend_errors"] = float64(failed)
	if backendProxy != nil {
		flat["backend_proxy_connections"] = float64(backendProxy.Stats().Accepted)
	}
}

// synRetryAfter is the client kernel's first SYN retransmission (TCP_TIMEOUT_INIT, RFC 6298
// section 2.1: 1 s). A connect on loopback takes microseconds unless its SYN was dropped, so
// a connect that took this long beyond the simulated handshake, in real time whatever the
// time scale, retried its SYN.
const synRetryAfter = time.Second

// synRetried reports whether a connect that took connect, on a link whose simulated
// handshake takes handshake, had its SYN retransmitted. The simulated handshake counts from
// the start of the dial and is not added to a kernel connect that already took longer
// (netsim's Proxy.Handshake returns at once then), so a retried connect under a handshake
// shorter than the retransmission takes synRetryAfter or more in all, not synRetryAfter on
// top of the handshake: at 50 ms RTT scenario 14's retried connects took 1,009-1,014 ms,
// and the older rule (connect - handshake >= 1 s) counted only the 67 of 364 that the
// loaded machine delayed by 50 ms more. A handshake of a second or more hides a
// retransmission inside its own wait, so there only a connect a whole second beyond it
// counts.
func synRetried(connect, handshake time.Duration) bool {
	if handshake < synRetryAfter {
		return connect >= synRetryAfter
	}
	return connect-handshake >= synRetryAfter
}

func requestRecord(ev client.Event, runStart, planned time.Time, scale float64) report.Request {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / scale }
	rq := report.Request{
		Seq: ev.Seq, LatencyMs: ms(ev.Latency), Conn: ev.ConnID, Reused: ev.Reused, Attempts: ev.Attempts,
		HiddenRetries: ev.HiddenRetries, Status: ev.Status, Bytes: ev.BytesRead, Class: string(ev.Class),
		Error: ev.Error, Code: ev.Code, ConnectMs: ms(ev.Connect), TLSMs: ms(ev.TLS), FirstByteMs: ms(ev.FirstByte),
		ServerConn:  ev.ServerConn,
		BackendConn: ev.BackendConn, BackendAttempts: ev.BackendAttempts, BackendReused: ev.BackendReused,
	}
	if !ev.Start.IsZero() {
		rq.StartMs = max(ms(ev.Start.Sub(runStart)), 0)
	}
	if !planned.IsZero() {
		rq.ScheduledMs = max(ms(planned.Sub(runStart)), 0)
		rq.QueueWaitMs = max(ms(ev.Start.Sub(planned)), 0)
	}
	return rq
}

// serverConns turns the embedded server's connection records into result records:
// times from the start of the run in scenario time, each named by its client connection
// where a response said which it was. A close by the client after the load ended is the
// client shutting down at the end of the run.
func serverConns(recs []server.ConnRecord, serverOf map[uint64]uint64, start, loadEnd time.Time, scale float64) []report.Conn {
	clientOf := make(map[uint64]uint64, len(serverOf))
	for c, s := range serverOf {
		clientOf[s] = c
	}
	ms := func(t time.Time) float64 { return max(float64(t.Sub(start))/float64(time.Millisecond)/scale, 0) }
	out := make([]report.Conn, 0, len(recs))
	for _, c := range recs {
		rc := report.Conn{Side: "server", ID: c.ID, ClientConn: clientOf[c.ID], OpenedMs: ms(c.Opened),
			ClosedBy: c.ClosedBy, Reason: c.Reason, Requests: c.Requests}
		if !c.Closed.IsZero() {
			at := ms(c.Closed)
			rc.ClosedMs = &at
			if c.ClosedBy == server.CloseByClient && c.Reason == server.ReasonUnknown && !c.Closed.Before(loadEnd) {
				rc.Reason = server.ReasonEnd
			}
		}
		out = append(out, rc)
	}
	return out
}

// closeCounts counts closed connections by who closed them and why.
func closeCounts(conns []report.Conn) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, c := range conns {
		if c.ClosedMs == nil {
			continue
		}
		if out[c.ClosedBy] == nil {
			out[c.ClosedBy] = map[string]int{}
		}
		out[c.ClosedBy][c.Reason]++
	}
	return out
}

func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return -1
	}
	return n
}

// direct reports whether a run has no link to simulate and the embedded server, so the
// client can dial the server without the proxy.
func direct(st scenario.Settings) bool {
	return st.Network.RTT == 0 && st.Network.Jitter == 0 && st.Network.Bandwidth == 0 &&
		st.Server.Backlog == 0 && st.Server.AcceptDelay == 0 && realKind(st.Server) == ""
}

// open is how many connections are still open on the link (or at the server when direct).
func open(srv *server.Server, proxy *netsim.Proxy) int64 {
	if proxy != nil || srv == nil {
		return proxy.Stats().Open
	}
	return srv.Stats().Open
}
