package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/server"
)

// settings are a run's settings with the invocation's overrides applied, as the run will
// use them: a real program, or the caller's Go client, runs in real time (scale 1).
func settings(r *scenario.Run, opt Options) scenario.Settings {
	st, _, _, _ := prepare(r, opt)
	return st
}

// prepare applies the invocation's overrides and says how the run goes: notes for the
// record, the real program when the file names one, and the clock (in st.Clock; refused
// says why a file that asked for the virtual clock cannot have it).
func prepare(r *scenario.Run, opt Options) (st scenario.Settings, notes []string, ex *execRun, refused string) {
	st = r.Settings
	if opt.TimeScale > 0 {
		st.TimeScale = opt.TimeScale
	}
	if opt.Seed != nil {
		st.Load.Seed = *opt.Seed
	}
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
	cc := chooseClock(st, opt)
	if note := cc.note(st.TimeScale); note != "" {
		notes = append(notes, note)
	}
	st.Clock = cc.clock
	if cc.clock == scenario.ClockVirtual {
		st.TimeScale = 1 // simulated time needs no compression
	}
	return st, notes, ex, cc.refused
}

// execute performs one run and returns its record; it never returns without one. Its
// timers report to tm, judged by judge.
func execute(ctx context.Context, w *report.Writer, sc *scenario.Scenario, r *scenario.Run, opt Options, tm *timers, judge *timingJudge) *report.Run {
	st, notes, ex, refused := prepare(r, opt)
	scale := scaler(st.TimeScale)
	rec := &report.Run{
		KalabVersion: opt.KalabVersion, RunID: opt.RunID, Scenario: sc.Name, File: sc.File,
		Variant: r.Variant, Matrix: r.Matrix, Params: paramsJSON(st), TimeScale: st.TimeScale, Clock: st.Clock,
		Seed: st.Load.Seed, StartedAt: time.Now().UTC(), Checks: []report.Check{}, Notes: notes,
	}
	log := opt.Log.With().Str("scenario", sc.Name).Str("variant", r.Variant).Logger()
	log.Info().Int("requests", st.Load.Requests).Float64("time_scale", st.TimeScale).Msg("run started")
	if opt.Observer != nil {
		opt.Observer.RunStarted(r, st.Load.Requests)
	}
	start := time.Now()
	pressure, cpuWait, sched, queue := lag.StartPressure(), lag.StartCPUWait(), lag.StartSched(), lag.StartRunQueue()
	var m check.Metrics
	var conns connOutcome
	var err error
	if ex != nil {
		ex.id, err = execclient.Identify(ctx, ex.cfg)
		rec.Client = ex.runtimeRecord()
	}
	if refused != "" && err == nil {
		err = errors.New(refused)
	} else if err == nil {
		if st.Clock == scenario.ClockVirtual {
			m, conns, err = driveVirtual(ctx, w, sc, r, st, opt, log, tm)
		} else {
			m, conns, err = drive(ctx, w, sc, r, st, scale, opt, ex, log, tm, metrics.StartProcProbe(metrics.DefaultProbeInterval))
		}
		rec.Closes, rec.Server, rec.Hops, rec.Replay = conns.closes, conns.server, conns.hops, conns.replay
		if ex != nil {
			rec.Client = ex.runtimeRecord()
			ex.programLag(tm)
		}
	}
	notRun := notRunReason(err)
	rec.WallMs = float64(time.Since(start)) / float64(time.Millisecond)
	rec.Metrics = m
	virtual := st.Clock == scenario.ClockVirtual
	if !virtual {
		sched.Into(&tm.sched) // a virtual run's timers wait for no core: time stands still while they do
	}
	rec.Timing = runTiming(tm, judge.after(st, m), st, pressure, cpuWait)
	if d, ok := queue.Mean(); ok {
		v := math.Round(float64(d)/float64(time.Microsecond)) / 1000
		rec.Timing.RunQueueMs = &v
	}
	settle(rec, sc, r, opt, notRun, err, ctx.Err() != nil, conns.written)
	if rec.Status == report.StatusPass || rec.Status == report.StatusFail {
		expectChecks(rec, r, m)
		rec.Predicted = predictedRecord(st, rec.Timing, m)
		if why := expectCPUFlip(r.Expect, rec); why != "" && opt.LagTolerance >= 0 && !virtual { // a negative tolerance judges nothing
			rec.Timing.Noisy, rec.Timing.Reason = true, why
			notAResult(rec)
		}
	}
	if opt.Baseline != nil && rec.Status != report.StatusNotRun && !rec.Timing.Noisy {
		opt.Baseline.Apply(rec)
		if rec.Timing.Noisy {
			// The judge found a verdict the machine's other work could have made (a
			// baseline regression inside what it took from the run).
			notAResult(rec)
		}
	}
	logEnd(log, rec, m)
	if opt.Observer != nil {
		opt.Observer.RunEnded(r, rec)
	}
	return rec
}

// runTiming is the run's account of its own timing: its timers judged against tol, and
// what the machine says about CPU pressure and waiting.
func runTiming(tm *timers, tol tolerance, st scenario.Settings, pressure lag.Pressure, cpuWait lag.CPUWait) *report.Timing {
	t := judgeTiming(tm, tol)
	if share, ok := pressure.Share(); ok {
		v := math.Round(share*1000) / 1000
		t.CPUPressure = &v
	}
	if st.Network.RTT > 0 { // a run with an RTT is never direct: its link delays
		t.LinkTrips = trips(st)
		floor := float64(st.Network.RTT.D()) / float64(time.Millisecond)
		t.LatencyFloorMs = &floor
	}
	if own, others, ok := cpuWait.Split(); ok {
		v := math.Round(float64(own+others)/float64(time.Microsecond)) / 1000
		n := math.Round(float64(others)/float64(time.Microsecond)) / 1000
		t.CPUWaitMs, t.CPUWaitNeighboursMs = &v, &n
	}
	return t
}

// settle gives the run its status from how it ended, before its checks.
func settle(rec *report.Run, sc *scenario.Scenario, r *scenario.Run, opt Options, notRun string, err error, interrupted, connsWritten bool) {
	switch {
	case notRun != "" && opt.RequireClients && errors.Is(err, execclient.ErrMissing):
		rec.Status, rec.Error = report.StatusError, notRun+" (--require-clients)"
	case notRun != "":
		markNotRun(rec, notRun, r.Expect)
	case err != nil && interrupted:
		rec.Status, rec.Error = report.StatusInterrupted, "interrupted before the run completed"
	case rec.Timing.Noisy:
		notAResult(rec)
	case err != nil:
		rec.Status, rec.Error = report.StatusError, err.Error()
	default:
		rec.Status = report.StatusPass
		if !opt.SkipRequests {
			rec.RequestsFile = report.RequestsPath(sc.Name, r.Variant)
			if connsWritten {
				rec.ConnectionsFile = report.ConnectionsPath(sc.Name, r.Variant)
			}
		}
	}
}

// expectChecks evaluates the run's expect assertions; one that fails fails the run.
func expectChecks(rec *report.Run, r *scenario.Run, m check.Metrics) {
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

// logEnd logs the run's end at the level its status deserves.
func logEnd(log zerolog.Logger, rec *report.Run, m check.Metrics) {
	ev := log.Info()
	if rec.Status == report.StatusError {
		ev = log.Error().Str("error", rec.Error)
	}
	if rec.Status == report.StatusNotRun {
		ev = log.Warn().Str("reason", rec.Reason)
	}
	ev.Str("status", rec.Status).Float64("requests", m.Requests).Float64("errors", m.Errors).
		Float64("connections", m.Connections).Float64("wall_s", math.Round(rec.WallMs)/1000).Msg("run ended")
}

// notAResult marks a noisy run as one without a verdict: none of its checks stand, so it
// can neither pass nor fail. The scheduler reruns it alone, or ends it as an engine error.
func notAResult(rec *report.Run) {
	rec.Status, rec.Error = report.StatusError, "noisy: "+rec.Timing.Reason
	rec.Checks, rec.Baseline, rec.Predicted = []report.Check{}, nil, nil
}

// connOutcome is what a run recorded about its connections and its hops.
type connOutcome struct {
	closes  map[string]map[string]int // closed_by -> reason -> count
	written bool                      // the connection file was written
	server  *report.Server            // the server the run talked to
	hops    []report.Hop              // each hop's identity and stats, the client first
	replay  *report.Replay            // what a replay run read of its recording
}

// drive builds the run's topology, starts it, runs the load through it and gathers the
// metrics. Hops are stopped in reverse order whatever happens.
func drive(ctx context.Context, w *report.Writer, sc *scenario.Scenario, r *scenario.Run, st scenario.Settings, scale scaler, opt Options, ex *execRun, log zerolog.Logger, tm *timers, probe *metrics.ProcProbe) (m check.Metrics, co connOutcome, err error) {
	// A hop that does not close cleanly (connections still open after the server's grace
	// period) does not change the run's figures, which are read before: it is a warning in
	// the log, not a dropped error.
	warn := func(role string, err error) { log.Warn().Err(err).Str("component", role).Msg("close") }
	runCtx, cancel := runContext(ctx, st, scale, opt)
	defer cancel()
	topo, err := buildTopology(w, sc, r, st, scale, opt, ex, log, tm)
	if err != nil {
		probe.Stop()
		return m, co, err
	}
	defer topo.closeAll(warn)
	err = topo.start(runCtx)
	if topo.serverUp() {
		co.server = topo.server.record()
	}
	if err != nil {
		probe.Stop()
		return m, co, err
	}
	rc := newRecorder(r, opt.Observer, scale, tm, topo.server, scale.d(st.Network.RTT))
	if !opt.SkipRequests {
		if rc.reqs, err = w.Requests(sc.Name, r.Variant); err != nil {
			probe.Stop()
			return m, co, err
		}
	}
	rc.start = time.Now()
	loadErr := topo.client.drive(runCtx, rc)
	fig := runFigures{total: time.Since(rc.start), loadEnd: time.Now()}
	fig.cpu, fig.rss = probe.Stop()
	if rc.reqs != nil {
		if err := rc.reqs.Close(); err != nil && loadErr == nil {
			loadErr = err
		}
	}
	flat, conns, err := wind(topo, rc, &fig, st, scale, warn, log)
	co.closes, co.hops = closeCounts(conns), fig.hops
	if rp, ok := topo.client.(recordingReader); ok {
		co.replay = rp.replayRecord()
	}
	if !opt.SkipRequests {
		if err := w.WriteConns(sc.Name, r.Variant, conns); err != nil && loadErr == nil {
			loadErr = err
		} else if err == nil {
			co.written = true
		}
	}
	tm.addMetrics(flat, float64(scale))
	m = check.FromFlat(flat)
	if loadErr == nil {
		loadErr = err
	}
	return m, co, runError(ctx, runCtx, loadErr)
}

// runContext bounds a run by its deadline.
func runContext(ctx context.Context, st scenario.Settings, scale scaler, opt Options) (context.Context, context.CancelFunc) {
	limit := deadline(st, scale)
	if opt.DeadlineScale > 0 {
		limit = satDuration(float64(limit) * opt.DeadlineScale)
	}
	return context.WithTimeoutCause(ctx, limit, fmt.Errorf("the run exceeded its deadline of %v", limit.Round(time.Second)))
}

// runError is the run's error: the deadline's cause when the deadline cut the load short.
func runError(ctx, runCtx context.Context, loadErr error) error {
	if loadErr == nil {
		return nil
	}
	if cause := context.Cause(runCtx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return loadErr
}

// runFigures are what the run itself measured, beside its hops.
type runFigures struct {
	total    time.Duration
	loadEnd  time.Time
	cpu      time.Duration
	rss      uint64
	timeWait int
	twErr    error
	hops     []report.Hop
}

// wind ends the run after its load: the client closes first, so the server and link
// counters include its goodbyes; the last FINs cross the link before what they left in
// TIME_WAIT is counted; the links close to complete their records; then every hop's
// stats are read once and flattened. The error is a broken reuse invariant.
func wind(topo *topology, rc *recorder, fig *runFigures, st scenario.Settings, scale scaler, warn func(string, error), log zerolog.Logger) (map[string]float64, []report.Conn, error) {
	if err := topo.client.Close(); err != nil {
		warn("client", err)
	}
	settle := time.Now().Add(time.Second + 2*scale.d(st.Network.RTT+st.Network.Jitter))
	for topo.stillOpen() > 0 && time.Now().Before(settle) {
		time.Sleep(5 * time.Millisecond)
	}
	if topo.net != nil {
		// The in-memory network counts the closes that would leave TIME_WAIT behind.
		fig.timeWait = topo.timeWait()
	} else {
		// Only this run's sockets: the port the client dialled and the client ports it accepted.
		fig.timeWait, fig.twErr = metrics.TimeWaitOwn(portOf(topo.front()), topo.own())
	}
	if fig.twErr != nil {
		log.Debug().Err(fig.twErr).Msg("time_wait not counted")
	}
	topo.finish()
	conns := topo.server.conns(rc, fig.loadEnd)
	summary := rc.agg.Summary(fig.total, float64(scale))
	rc.requests = int(summary.Requests)
	stats := topo.stats()
	fig.hops = topo.records(stats)
	flat := flatten(summary.Flat(), rc, fig, topo, stats)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return flat, conns, reuseError(rc.reuse.violations(topo.reuseFacts(flat, conns)))
}

// flatten writes the run's metrics: the requests' summary, the run's own figures, then
// each hop's stats (the server first, the client last, whose program's figures replace
// kalab's own). This is the one place hop stats become the flat metrics of the record.
func flatten(flat map[string]float64, rc *recorder, fig *runFigures, topo *topology, stats []Stats) map[string]float64 {
	flat["syn_retried_connects"] = float64(rc.retriedConnects.Load())
	rc.mu.Lock()
	flat["failed_bursts"], flat["failed_bursts_mask"] = rc.failedBursts()
	rc.mu.Unlock()
	if n := rc.requests; n > 0 {
		flat["cpu_us_per_request"] = float64(fig.cpu.Microseconds()) / float64(n)
	}
	flat["peak_rss_mb"] = float64(fig.rss) / (1 << 20)
	if fig.twErr == nil {
		flat["time_wait"] = float64(fig.timeWait)
	}
	for i := len(stats) - 1; i >= 0; i-- {
		stats[i].Flatten(flat)
	}
	if cs, ok := stats[0].(clientStats); !ok || !cs.trusted {
		// What kalab controls counts, not what the client says: the connections it opened
		// are those the link (or the server, without a link) accepted.
		flat["connections"] = float64(topo.acceptedAtFront())
	}
	return flat
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
	// Whole nanoseconds of scenario time, then milliseconds: dividing by a time scale
	// such as 0.1 otherwise leaves binary noise in the last digits (183.23665999999997
	// for 183.23666), 9 of the 176 bytes of an average line of file 04.
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/scale) / float64(time.Millisecond) }
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
