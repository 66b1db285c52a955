package topology

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/internal/inorder"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/topology/internal/reuse"
)

// Result is what a run recorded about its connections and its hops.
type Result struct {
	Closes  map[string]map[string]int // closed_by -> reason -> count
	Written bool                      // the connection file was written
	Server  *report.Server            // the server the run talked to
	Hops    []report.Hop              // each hop's identity and stats, the client first
	Replay  *report.Replay            // what a replay run read of its recording
	// Notes name what of a virtual run's record Go's scheduler decides (configure.Unrepeatable).
	Notes []string
}

// Drive builds the run's topology, starts it, runs the load through it and gathers the
// metrics. Hops are stopped in reverse order whatever happens.
func Drive(ctx context.Context, run *Run) (m check.Metrics, co Result, err error) {
	w, sc, r, st, scale, opt := run.W, run.Scenario, run.Source, run.Settings, run.Scale(), run.Options
	log, tm, probe := run.Log, run.Timers, run.Probe
	// A hop that does not close cleanly (connections still open after the server's grace
	// period) does not change the run's figures, which are read before: it is a warning in
	// the log, not a dropped error.
	warn := func(role string, err error) { log.Warn().Err(err).Str("component", role).Msg("close") }
	runCtx, cancel := runContext(ctx, st, scale, opt)
	defer cancel()
	co.Notes = configure.Unrepeatable(st, opt.Network != nil)
	topo, err := buildTopology(run)
	if err != nil {
		probe.Stop()
		return m, co, err
	}
	defer topo.closeAll(warn)
	err = topo.start(runCtx)
	if topo.serverUp() {
		co.Server = topo.server.record()
	}
	if err != nil {
		probe.Stop()
		return m, co, err
	}
	rc := newRecorder(r, opt.Observer, scale, tm, topo.server, scale.D(st.Network.RTT))
	if !opt.SkipRequests {
		reqs, err := w.Requests(sc.Name, r.Variant)
		if err != nil {
			probe.Stop()
			return m, co, err
		}
		rc.reqs = inorder.For(reqs, topo.net != nil) // on the virtual clock, same-instant requests in seq order
	}
	rc.start = time.Now()
	if a, ok := topo.server.(eventArmer); ok {
		a.armEvents(rc.start) // server.events at times: from the start of the load
	}
	loadErr := topo.client.drive(runCtx, rc)
	fig := runFigures{total: time.Since(rc.start), loadEnd: time.Now()}
	fig.cpu, fig.rss = probe.Stop()
	if rc.reqs != nil {
		if err := rc.reqs.Close(); err != nil && loadErr == nil {
			loadErr = err
		}
	}
	flat, conns, err := wind(topo, rc, &fig, st, scale, warn, log)
	co.Closes, co.Hops = closeCounts(conns), fig.hops
	if rp, ok := topo.client.(recordingReader); ok {
		co.Replay = rp.replayRecord()
	}
	if !opt.SkipRequests {
		if err := w.WriteConns(sc.Name, r.Variant, conns); err != nil && loadErr == nil {
			loadErr = err
		} else if err == nil {
			co.Written = true
		}
	}
	tm.AddMetrics(flat, float64(scale))
	m = check.FromFlat(flat)
	if loadErr == nil {
		loadErr = err
	}
	return m, co, runError(ctx, runCtx, loadErr)
}

// runContext bounds a run by its deadline.
func runContext(ctx context.Context, st scenario.Settings, scale shape.Scale, opt Options) (context.Context, context.CancelFunc) {
	limit := configure.Deadline(st, scale)
	if opt.DeadlineScale > 0 {
		limit = shape.SatDuration(float64(limit) * opt.DeadlineScale)
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

// quiet, on the virtual clock, waits until every goroutine of the run is blocked, so that
// what is read next sees every event due at this instant: which of two goroutines woken at
// one instant runs first is Go's scheduler's choice, and a close due at the instant of a
// poll was otherwise seen then or 5 ms later (model_ms read 5,000 or 5,005 ms in two runs
// of one file). On the real clock it does nothing.
func (t *topology) quiet() {
	if t.net != nil {
		t.net.Quiet(synctest.Wait)
	}
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
func wind(topo *topology, rc *recorder, fig *runFigures, st scenario.Settings, scale shape.Scale, warn func(string, error), log zerolog.Logger) (map[string]float64, []report.Conn, error) {
	if err := topo.client.Close(); err != nil {
		warn("client", err)
	}
	if r, ok := topo.client.(interface{ closeReasons() map[uint64]string }); ok {
		rc.clientWhy = r.closeReasons()
	}
	settle := time.Now().Add(time.Second + 2*scale.D(st.Network.RTT+st.Network.Jitter))
	for topo.quiet(); topo.stillOpen() > 0 && time.Now().Before(settle); topo.quiet() {
		time.Sleep(5 * time.Millisecond)
	}
	if topo.pnet != nil {
		// QUIC leaves no TIME_WAIT: its connections are not TCP's.
		fig.twErr = errNoTCP
	} else if topo.net != nil {
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
	if b := topo.balancer(); b != nil {
		conns = append(conns, b.conns(rc.start, fig.loadEnd, float64(scale))...)
	}
	summary := rc.agg.Summary(fig.total, float64(scale))
	rc.requests = int(summary.Requests)
	stats := topo.stats()
	fig.hops = topo.records(stats)
	flat := flatten(summary.Flat(), rc, fig, topo, stats)
	if c, ok := topo.client.(interface{ reportError() error }); ok {
		if err := c.reportError(); err != nil {
			return flat, conns, err
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return flat, conns, reuse.Error(rc.reuse.Violations(topo.reuseFacts(flat, conns)))
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
		at, wait := max(ms(planned.Sub(runStart)), 0), max(ms(ev.Start.Sub(planned)), 0)
		rq.ScheduledMs, rq.QueueWaitMs = &at, &wait
	}
	return rq
}

// serverConns turns the embedded server's connection records into result records:
// times from the start of the run in scenario time, each named by its client connection
// where a response said which it was. A close by the client takes the reason the client
// gives (clientWhy, by client connection); one it cannot give, after the load ended, is
// the client shutting down at the end of the run.
func serverConns(recs []server.ConnRecord, serverOf map[uint64]uint64, clientWhy map[uint64]string, start, loadEnd time.Time, scale float64) []report.Conn {
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
			if why, ok := clientWhy[rc.ClientConn]; ok && c.ClosedBy == server.CloseByClient && c.Reason == server.ReasonUnknown && rc.ClientConn != 0 {
				rc.Reason = why
			} else if c.ClosedBy == server.CloseByClient && c.Reason == server.ReasonUnknown && !c.Closed.Before(loadEnd) {
				rc.Reason = server.ReasonEnd
			}
		}
		out = append(out, rc)
	}
	return out
}

// closeCounts counts the server's closed connections by who closed them and why. One that
// neither end closed (the proxy in front of a real server closed it at the run's end, with
// the balancer's pool still holding it) counts as still open, as the embedded server's do.
func closeCounts(conns []report.Conn) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, c := range conns {
		if c.ClosedMs == nil || c.ClosedBy == "" || c.Side == report.SideBalancer {
			continue
		}
		if out[c.ClosedBy] == nil {
			out[c.ClosedBy] = map[string]int{}
		}
		out[c.ClosedBy][c.Reason]++
	}
	return out
}

// errNoTCP is why an HTTP/3 run counts no TIME_WAIT.
var errNoTCP = errors.New("an HTTP/3 run has no TCP connections")

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
