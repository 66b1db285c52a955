package judge

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// Lag sources, as named in metrics (lag_ms.<source>) and in a run record's timing.
const (
	SrcLink      = "link"
	SrcSchedule  = "schedule"
	SrcIdleClose = "idle_close"
	// srcSched is not a timer of the model: it is how long the process's goroutines waited
	// to run once they could (lag.Sched), recorded in the run record's timing only.
	srcSched = "sched"
	// SrcProgram is how late a real client program began its requests against its own
	// schedule (exec runs only; see programLag). It moves what the schedule's timers move,
	// so it is judged on the schedule's limits.
	SrcProgram = "program"
)

// Tolerance rule (README "Runs that know when they are wrong"). A timer's lateness matters
// only through the checks that read what it moves, so each run's tolerance is derived from
// the metrics its own checks read: its expect checks, the compare checks that name its
// variant, and the metrics a baseline gates when the invocation compares with one.
//
//   - A latency metric is a sum of delayed trips. A request waits in turn on at most
//     trips(st) of the link's timers (its request and response; for a new connection the
//     simulated SYN-ACK and the TLS flights), so a check on latency_ms.pNN moves by about
//     trips x the link's lateness at that percentile. Its margin is not known before the
//     run, so it is taken as a tenth of the RTT (the tightest checks of the bundled suite:
//     p50 within 10% of one RTT, a ratio within 3% of three): the link's lateness at the
//     matching statistic may reach RTT/latencyDivisor/trips. p50 and min are judged on the
//     link's p50; p90-p99 on its p99; max on its max; mean, total_ms and rps, which add
//     every trip, on its mean, and total_ms/rps also on the schedule's mean against a tenth
//     of the shortest pause.
//   - A count (connections, errors, reused requests, retries...) turns on whether a pause
//     ends before or after an idle timeout. A flip needs the pause and the timeout to move
//     the whole gap between them toward each other: the schedule's lateness plus the two
//     link trips around the pause on one side, the idle close plus the trip of its FIN on
//     the other. So each side's budget is shared: schedule and idle_close p99 <= gap/2,
//     link p99 <= gap/4; at their tolerances they add to at most the gap.
//   - A metric timing cannot move (requests, bytes, CPU, time_wait...) sets nothing, and a
//     run with no check that timing can move is recorded but not judged.
//
// RTT and gap are in real time (after the time scale). gap is the smallest distance between
// an end of the pause range and a timeout that decides reuse (see pauseGap).
const (
	latencyDivisor = 10
	gapShare       = 2 // schedule and idle_close: gap/2
	linkGapShare   = 4 // link: gap/4 (two trips around a pause share half the gap)
	pauseDivisor   = 10
)

// tolFloor keeps a tolerance from asking for better than the clocks themselves can
// promise: the link's precise clock is good to tens of microseconds, Go timers to about a
// millisecond; asking for less than this would mark every run noisy on any machine.
const tolFloor = 200 * time.Microsecond

// Statistics of a source's lateness a limit can judge.
const (
	StatP50  = "p50"
	StatP99  = "p99"
	StatMax  = "max"
	StatMean = "mean"
)

// Limit is one judged statistic of one source: its lateness in real time may reach D.
type Limit struct {
	Src, Stat string
	D         time.Duration
	By        string // the metric and the check that set it
}

// Tolerance is a run's limits, at most one per source and statistic (the tightest).
type Tolerance []Limit

// Of returns the source's limits.
func (t Tolerance) Of(src string) []Limit {
	var out []Limit
	for _, l := range t {
		if l.Src == src {
			out = append(out, l)
		}
	}
	return out
}

// scaled multiplies every limit by f (--lag-tolerance).
func (t Tolerance) scaled(f float64) Tolerance {
	out := slices.Clone(t)
	for i := range out {
		out[i].D = time.Duration(float64(out[i].D) * f)
	}
	return out
}

// Timers are one run's lateness recorders.
type Timers struct {
	Link, Schedule, Idle, Queue lag.Recorder
	Sched                       lag.Recorder // filled at the run's end (lag.Sched.Into)
	Program                     lag.Recorder // an exec client's own lateness, filled at its end
	// Spans are the run's requests, kept for the edge rule (WatchEdges); nil: not kept.
	Spans *SpanLog
	// ServerWait is what a real server program's threads waited for a core, told by its
	// hop when it stops; nil for any other server (realtimers.go).
	ServerWait *ProgramWait
}

// sources returns the recorders by source name.
func (t *Timers) sources() map[string]*lag.Recorder {
	src := t.TimerSources()
	src[srcSched] = &t.Sched
	src[SrcProgram] = &t.Program
	return src
}

// TimerSources returns the recorders of the model's own timers, which fill while the run
// goes (so admission can watch them) and have metrics (lag_ms.*); sched is filled at the end.
func (t *Timers) TimerSources() map[string]*lag.Recorder {
	return map[string]*lag.Recorder{SrcLink: &t.Link, SrcSchedule: &t.Schedule, SrcIdleClose: &t.Idle}
}

// LateWhat says what a source's lateness is, for a noisy run's reason.
var LateWhat = map[string]string{
	SrcLink:      "link timers fired",
	SrcSchedule:  "schedule timers fired",
	SrcIdleClose: "idle_close timers fired",
	srcSched:     "goroutines waited to run (the runtime's sampled scheduling latency)",
	SrcProgram:   "the client program began its requests",
}

// limitsOf returns the limits a source is judged on: the program's are the schedule's.
func (t Tolerance) limitsOf(src string) []Limit {
	if src == SrcProgram {
		return t.Of(SrcSchedule)
	}
	return t.Of(src)
}

// AddMetrics writes lag_ms.* and queue_wait_ms.* in scenario time.
func (t *Timers) AddMetrics(flat map[string]float64, scale float64) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / scale }
	put := func(prefix string, s lag.Summary) {
		flat[prefix+".p50"], flat[prefix+".p99"], flat[prefix+".max"] = ms(s.P50), ms(s.P99), ms(s.Max)
	}
	for name, r := range t.TimerSources() {
		put("lag_ms."+name, r.Summary())
	}
	put("queue_wait_ms", t.Queue.Summary())
}

// metricClass says how timing moves a metric: a latency judged at a statistic of the
// link's lateness, a count that turns on a pause against a timeout, or nothing.
func metricClass(metric string) (class string, stat string) {
	switch metric {
	case "latency_ms.p50":
		return "latency", StatP50
	case "latency_ms.p90", "latency_ms.p95", "latency_ms.p99":
		return "latency", StatP99
	case "latency_ms.max", "latency_ms.min":
		// The fastest request may be the one that met the most lateness (with two
		// requests, either): the model's min is at least the observed min less the
		// largest lateness any request met, so min is judged at the max, as max is.
		return "latency", StatMax
	case "latency_ms.mean", "total_ms", "rps":
		return "latency", StatMean
	case "requests", "bytes_up", "bytes_down", "cpu_us_per_request", "peak_rss_mb", "time_wait",
		"listen_overflows", "syn_retried_connects", "balancer_requests":
		return "", ""
	}
	if strings.HasPrefix(metric, "lag_ms.") || strings.HasPrefix(metric, "queue_wait_ms.") {
		return "", ""
	}
	return "count", ""
}

// Trips is how many of the link's delayed one-way Trips a request can wait on in turn: its
// request and response, and for a new connection the simulated SYN-ACK and the TLS
// handshake's flights (one round trip for TLS 1.3, two for TLS 1.2).
func Trips(st scenario.Settings) int {
	k := 3
	if st.Server.TLS {
		if st.Server.TLSVersion == "1.2" {
			k += 4
		} else {
			k += 2
		}
	}
	return k
}

// read is one metric a check reads, and where; expect is the check when it is one of the
// run's own expect checks, whose margin can be measured once the run's metrics are known.
type read struct {
	metric, by string
	expect     *scenario.Assertion
	// slack, when positive, is how far a baseline lets the metric move, in its unit (the
	// margin known before the run; for rps, total_ms's equivalent).
	slack float64
	// check is the expect or compare check that reads it; nil for a baseline's metric.
	check *scenario.Assertion
}

// Reads lists the metrics the run's checks read: its expect checks, the compare checks that
// name its variant, and the metrics a baseline gates (with their slack).
func Reads(sc *scenario.Scenario, r *scenario.Run, gated map[string]float64) []read {
	var out []read
	at := func(kind string, a scenario.Assertion) string {
		return fmt.Sprintf("%s check at %s:%d", kind, filepath.Base(a.File), a.Line)
	}
	for i := range r.Expect {
		a := &r.Expect[i]
		for _, ref := range a.Refs() {
			out = append(out, read{metric: ref.Metric, by: ref.Metric + " in the " + at("expect", *a), expect: a, check: a})
		}
	}
	if sc != nil {
		for _, a := range sc.Compare {
			for _, ref := range a.Refs() {
				if ref.Variant == r.Variant {
					out = append(out, read{metric: ref.Metric, by: ref.Key() + " in the " + at("compare", a), check: &a})
				}
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(gated)) {
		out = append(out, read{metric: m, by: m + " gated by the baseline", slack: gated[m]})
	}
	return out
}

// Judge derives a run's tolerance: from its plan before the run, and after it with
// each expect check's own margin on the run's metrics.
// New is a run's judge: its reads (Reads) and the invocation's --lag-tolerance factor.
func New(rd []read, factor float64) *Judge { return &Judge{reads: rd, factor: factor} }

// Judge derives a run's tolerance from what its checks read.
type Judge struct {
	reads  []read
	factor float64 // --lag-tolerance: 0 means 1, negative judges nothing
}

func (j *Judge) scaled(t Tolerance) Tolerance {
	switch f := j.factor; {
	case f < 0:
		return nil
	case f > 0:
		return t.scaled(f)
	}
	return t
}

// Before is the tolerance the plan gives, with every latency margin taken as RTT/10.
func (j *Judge) Before(st scenario.Settings) Tolerance {
	return j.scaled(tolerances(j.reads, st, shape.Scale(st.TimeScale), nil))
}

// After is the tolerance the run is judged on: an expect check on a latency uses the margin
// it had on the run's metrics.
func (j *Judge) After(st scenario.Settings, m check.Metrics) Tolerance {
	return j.scaled(tolerances(j.reads, st, shape.Scale(st.TimeScale), &m))
}

// margin is the most lateness per link trip at which an expect check's verdict stays what
// it was for every value the lateness could have added to the latencies it reads. Lateness
// only adds, so the model's value of a latency lies between the observed one and the
// observed one less trips x the lateness, never below one round trip of the link (rtt, in
// scenario time; lowered); the check is evaluated across that range (in
// steps of a two-hundredth of limit), and the first lateness that changes its verdict
// bounds the margin. ok is false when the check reads no latency.
func margin(a *check.Assertion, m check.Metrics, trips int, scale float64, rtt scenario.Duration, limit time.Duration) (time.Duration, bool) {
	var lat []string
	for _, ref := range a.Refs() {
		if strings.HasPrefix(ref.Metric, "latency_ms.") {
			lat = append(lat, ref.Metric)
		}
	}
	if len(lat) == 0 || limit <= 0 {
		return 0, false
	}
	flat := m.Flat()
	floor := floorIfAllAnswered(m, float64(rtt.D())/float64(time.Millisecond)) // latencyFloor's rule
	verdict := func(late time.Duration) bool {
		f := maps.Clone(flat)
		d := float64(trips) * float64(late) / float64(time.Millisecond) / scale // scenario ms
		for _, name := range lat {
			f[name] = lowered(f[name], d, floor)
		}
		ok, err := a.Eval(check.FromFlat(f))
		return ok && err == nil
	}
	const steps = 200
	v0 := verdict(0)
	for i := 1; i <= steps; i++ {
		if verdict(limit*time.Duration(i)/steps) != v0 {
			return limit * time.Duration(i-1) / steps, true
		}
	}
	return limit, true
}

// tolerances derives, from a run's settings and the metrics its checks read, the lateness
// each source may reach in real time before the run's verdicts are not to be trusted. With
// the run's metrics (m not nil), an expect check on a latency is judged on its own margin
// (see margin), up to one RTT of lateness per trip, instead of RTT/10.
func tolerances(rd []read, st scenario.Settings, scale shape.Scale, m *check.Metrics) Tolerance {
	var out Tolerance
	tighten := func(src, stat string, d time.Duration, by string) {
		d = max(d, tolFloor)
		for i, l := range out {
			if l.Src == src && l.Stat == stat {
				if d < l.D {
					out[i].D, out[i].By = d, by
				}
				return
			}
		}
		out = append(out, Limit{Src: src, Stat: stat, D: d, By: by})
	}
	link := st.Network.RTT > 0
	for _, x := range rd {
		class, stat := metricClass(x.metric)
		switch class {
		case "latency":
			if x.slack > 0 {
				baselineLimits(tighten, x, st, scale)
				break
			}
			if link {
				k := Trips(st)
				rtt := scale.D(st.Network.RTT)
				if m != nil && x.expect != nil && strings.HasPrefix(x.metric, "latency_ms.") {
					if d, ok := margin(x.expect.Assertion, *m, k, float64(scale), st.Network.RTT, rtt); ok {
						tighten(SrcLink, stat, d, fmt.Sprintf("%s: its margin on this run, over %d trips", x.by, k))
						stallLimit(tighten, x, *m, st, scale, stat)
						break
					}
				}
				tighten(SrcLink, stat, rtt/latencyDivisor/time.Duration(k),
					fmt.Sprintf("%s: RTT/%d over %d trips", x.by, latencyDivisor, k))
			}
			if stat == StatMean && x.metric != "latency_ms.mean" && pauses(st) {
				tighten(SrcSchedule, StatMean, scale.D(st.Load.Pause.Min)/pauseDivisor,
					fmt.Sprintf("%s: a tenth of the shortest pause", x.by))
			}
		case "count":
			countLimits(tighten, x, st, scale)
		}
	}
	slices.SortFunc(out, func(a, b Limit) int { return strings.Compare(a.Src+"."+a.Stat, b.Src+"."+b.Stat) })
	return out
}

// stallLimit judges the runtime's scheduling latency (sched) at its max for an expect
// check on a latency's extreme (min or max), one request's figure: a goroutine of the
// request's path that waits that long to run (its thread descheduled for a busy core's
// slice, where no timer is waiting) adds it to that request once, where a timer would
// have seen nothing. The limit is the check's margin on the run over one such wait. The
// figure is the process's, every run in flight included, so it errs toward rerunning the
// run alone.
func stallLimit(tighten func(src, stat string, d time.Duration, by string), x read, m check.Metrics, st scenario.Settings, scale shape.Scale, stat string) {
	if stat != StatMax {
		return
	}
	if d, ok := margin(x.expect.Assertion, m, 1, float64(scale), st.Network.RTT, scale.D(st.Network.RTT)); ok {
		tighten(srcSched, StatMax, d, x.by+": its margin on this run, over one goroutine's wait to run")
	}
}

// countLimits sets the limits of a count the run's checks read: a goroutine's wait against
// the shortest deciding timeout, and the timers against the gap between a pause and the
// timeout it races.
func countLimits(tighten func(src, stat string, d time.Duration, by string), x read, st scenario.Settings, scale shape.Scale) {
	gap, gapWhy, hasGap := pauseGap(st)
	if t, ok := shortestTimeout(st); ok {
		// A goroutine that waits to run holds back whatever it was about to do: a
		// wait as long as the shortest deciding timeout, less the round trip a
		// connection idles between two requests of a burst, can carry an idle
		// connection past it in the middle of a burst. One wait is enough, so it is
		// judged at the max, with half of that distance.
		d := scale.D(scenario.Duration(t.d-st.Network.RTT.D())) / gapShare
		tighten(srcSched, StatMax, d, fmt.Sprintf("%s: half of %s %v less one RTT", x.by, t.name, t.d))
	}
	if !hasGap {
		return
	}
	g := scale.D(scenario.Duration(gap))
	by := x.by + ": " + gapWhy
	tighten(SrcSchedule, StatP99, g/gapShare, by)
	if st.Server.IdleTimeout > 0 {
		tighten(SrcIdleClose, StatP99, g/gapShare, by)
	}
	if !shape.Direct(st) {
		tighten(SrcLink, StatP99, g/linkGapShare, by)
	}
}

// baselineLimits sets the limits of a latency the baseline gates, whose margin is known
// before the run: the slack the baseline allows (scenario ms, so x scale in real time). A
// percentile moves by trips x the link's lateness; total_ms (and rps, given as total_ms's
// slack) by that along each lane of the closed loop (requests / concurrency requests in
// turn), plus every pause's lateness, which then shares the slack half and half.
func baselineLimits(tighten func(src, stat string, d time.Duration, by string), x read, st scenario.Settings, scale shape.Scale) {
	_, stat := metricClass(x.metric)
	k := Trips(st)
	slack := time.Duration(x.slack * float64(scale) * float64(time.Millisecond))
	link := st.Network.RTT > 0
	if strings.HasPrefix(x.metric, "latency_ms.") {
		if link {
			tighten(SrcLink, stat, slack/time.Duration(k), fmt.Sprintf("%s: its slack of %.1f ms over %d trips", x.by, x.slack, k))
		}
		return
	}
	lanes := max(st.Load.Concurrency, 1)
	inTurn := (st.Load.Requests + lanes - 1) / lanes
	share := slack
	if pauses(st) {
		share = slack / 2
		n := (st.Load.Requests+st.Load.Burst-1)/st.Load.Burst - 1 // pauses between bursts
		tighten(SrcSchedule, StatMean, share/time.Duration(max(n, 1)),
			fmt.Sprintf("%s: half its slack of %.1f ms over %d pauses", x.by, x.slack, n))
	}
	if link {
		tighten(SrcLink, StatMean, share/time.Duration(k*inTurn),
			fmt.Sprintf("%s: its slack of %.1f ms over %d requests in turn of %d trips", x.by, x.slack, inTurn, k))
	}
}

// pauses reports whether the schedule pauses between bursts.
func pauses(st scenario.Settings) bool {
	l := st.Load
	return l.Burst > 0 && l.Burst < l.Requests && l.Pause.Min > 0
}

// shortestTimeout is the shortest timeout that decides reuse (decidingTimeouts) and is
// longer than one RTT; false when there is none.
func shortestTimeout(st scenario.Settings) (timeout, bool) {
	var best timeout
	ok := false
	for _, t := range decidingTimeouts(st) {
		if t.d > st.Network.RTT.D() && (!ok || t.d < best.d) {
			best, ok = t, true
		}
	}
	return best, ok
}

// timeout is one idle timeout that decides reuse, in scenario time.
type timeout struct {
	d    time.Duration
	name string
}

// decidingTimeouts lists the idle timeouts that decide reuse: the server's idle timeout,
// the client's, and the client's hint-derived one (server idle timeout or hint, minus
// client.hint_buffer). A server timeout longer than a client timeout decides nothing when
// the client talks to the server itself, since the client has closed the connection
// first; behind a balancer the server's timeout governs the balancer's connections, which
// the client's timeouts do not close.
func decidingTimeouts(st scenario.Settings) []timeout {
	var clientSide []timeout
	srv := st.Server.IdleTimeout.D()
	if srv > 0 && st.Client.HonorHint && st.Server.KeepaliveHint.Mode == scenario.HintOn {
		clientSide = append(clientSide, timeout{srv - st.Client.HintBuffer.D(), "the hinted timeout"})
	}
	if st.Client.HonorHint && st.Server.KeepaliveHint.Mode == scenario.HintDuration {
		clientSide = append(clientSide, timeout{st.Server.KeepaliveHint.Duration.D() - st.Client.HintBuffer.D(), "the hinted timeout"})
	}
	if t := st.Client.IdleTimeout.D(); t > 0 {
		clientSide = append(clientSide, timeout{t, "client.idle_timeout"})
	}
	if bs := st.Balancers(); len(bs) > 0 {
		// Behind a balancer (or a chain of them) any link may be the tightest edge: each
		// balancer's idle timeouts decide reuse on a link of their own.
		for i, b := range bs {
			path := scenario.BalancerPath(i, len(bs))
			clientSide = append(clientSide, timeout{b.IdleTimeout.D(), path + ".idle_timeout"},
				timeout{b.Backend.IdleTimeout.D(), path + ".backend.idle_timeout"})
		}
	}
	out := slices.DeleteFunc(slices.Clone(clientSide), func(t timeout) bool { return t.d <= 0 })
	shadowed := st.Balancer == nil && slices.ContainsFunc(out, func(c timeout) bool { return c.d < srv })
	if srv > 0 && !shadowed {
		out = append(out, timeout{srv, "server.idle_timeout"})
	}
	return out
}

// pauseGap is the smallest distance, in scenario time, between an end of the pause range
// and a timeout that decides reuse (decidingTimeouts), with what it is between; ok is false
// for a run without pauses or timeouts. Pairs exactly equal are skipped: a pause set
// exactly on a timeout is a coin toss that no precision decides.
func pauseGap(st scenario.Settings) (time.Duration, string, bool) {
	l := st.Load
	if l.Burst <= 0 || l.Burst >= l.Requests || l.Pause.Max <= 0 {
		return 0, "", false
	}
	best, why, ok := time.Duration(0), "", false
	for _, p := range []time.Duration{l.Pause.Min.D(), l.Pause.Max.D()} {
		for _, t := range decidingTimeouts(st) {
			g := p - t.d
			if g < 0 {
				g = -g
			}
			if g == 0 {
				continue
			}
			if !ok || g < best {
				best, ok = g, true
				why = fmt.Sprintf("a pause of %v is %v from %s %v", p, g, t.name, t.d)
			}
		}
	}
	return best, why, ok
}

// StatOf returns one statistic of a summary.
func StatOf(s lag.Summary, stat string) time.Duration {
	switch stat {
	case StatP50:
		return s.P50
	case StatMax:
		return s.Max
	case StatMean:
		return s.Mean
	}
	return s.P99
}

// Assess builds a run's timing record: each source's lateness against its limits.
func Assess(t *Timers, tol Tolerance) *report.Timing {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	tm := &report.Timing{Sources: map[string]report.TimingSource{}, Attempt: 1}
	var over []string
	for name, r := range t.sources() {
		s := r.Summary()
		if name == SrcProgram && s.N == 0 {
			continue // not an exec run, or a program that reported no planned start
		}
		src := report.TimingSource{N: s.N, P50: ms(s.P50), P99: ms(s.P99), Max: ms(s.Max), Mean: ms(s.Mean)}
		for _, l := range tol.limitsOf(name) {
			v := ms(l.D)
			src.Limits = append(src.Limits, report.TimingLimit{Stat: l.Stat, ToleranceMs: v, SetBy: l.By})
			if l.Stat == StatP99 {
				src.ToleranceMs = &v
			}
			if got := StatOf(s, l.Stat); s.N > 0 && got > l.D {
				over = append(over, fmt.Sprintf("%s %.2f ms late at the %s (of %d, max %.2f ms) against a tolerance of %.2f ms set by %s",
					LateWhat[name], ms(got), l.Stat, s.N, ms(s.Max), v, l.By))
			}
		}
		tm.Sources[name] = src
	}
	if len(over) > 0 {
		slices.Sort(over)
		tm.Noisy, tm.Reason = true, strings.Join(over, "; ")
	}
	return tm
}

// QueueWait records how long after its scheduled start a request really began, and
// returns the scheduled instant (zero when the context came from elsewhere).
func (t *Timers) QueueWait(ctxScheduled time.Time, ok bool, started time.Time) time.Time {
	if !ok || started.IsZero() {
		return time.Time{}
	}
	t.Queue.Add(started.Sub(ctxScheduled))
	return ctxScheduled
}
