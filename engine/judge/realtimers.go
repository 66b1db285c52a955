package judge

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// The CPU-pressure rule for real timers. The timing sources (link, schedule, idle_close)
// are the model's own timers, and the rule per check (cpurule.go) covers what a core's
// wait adds to a latency and to the run's wall time. Some metrics come from timers no
// source watches: a real server program's own idle close fires inside the program, and a
// paced accept loop (server.accept_delay on the real clock) decides which connections get
// through the listen queue and which time out. Those timers fire late when their thread
// waits for a core too, so the metrics they produce, and the counts that turn on them, are
// evaluated over how far the CPU other processes took could have moved them, as total_ms
// and rps are: a verdict that could change inside that range is not given. What qualifies
// is the table realTimers, by what produces the metric, never by a file's name.

// ProgramWait is what a real program's threads waited for a core over a run: behind its
// own threads and kalab's (Own), and behind the machine's other processes (Neighbours).
type ProgramWait struct{ Own, Neighbours time.Duration }

// realTimer is one timer no timing source watches, the metrics it produces, and how far
// the CPU other processes took could have moved them in a run (reach, in the metrics'
// unit: down when the timer's lateness lowers the model's value below the observed one, up
// when it raises it; 0, 0 when the run does not say).
type realTimer struct {
	what    string
	metrics []string // a name ending in "." is a prefix
	applies func(st scenario.Settings) bool
	reach   func(st scenario.Settings, r *report.Run) (down, up float64, why string)
}

// realTimers is what qualifies: the metrics, the timer that produces them, and its reach.
var realTimers = []realTimer{
	{
		what:    "the real server's own idle timer",
		metrics: []string{"server_idle_close_ms."},
		applies: func(st scenario.Settings) bool { return st.Server.Exec != "" || st.Server.Command != "" },
		reach:   idleCloseReach,
	},
	{
		what: "the paced accept loop (server.accept_delay)",
		metrics: []string{"errors", "errors_by_class.", "connections", "server_connections", "proxy_connections",
			"listen_overflows", "syn_retried_connects", "failed_attempts"},
		applies: func(st scenario.Settings) bool { return st.Server.AcceptDelay > 0 },
		reach:   acceptReach,
	},
}

// TimerRanges returns, for every metric of rec a real timer produced (realTimers), how far
// the CPU other processes took could have moved it; nil for a virtual run, whose timers
// wait for no core, and when nothing could have moved.
func TimerRanges(st scenario.Settings, rec *report.Run) map[string]report.TimerRange {
	if st.Clock == scenario.ClockVirtual || rec.Timing == nil {
		return nil
	}
	out := map[string]report.TimerRange{}
	flat := rec.Metrics.Flat()
	for _, t := range realTimers {
		if !t.applies(st) {
			continue
		}
		down, up, why := t.reach(st, rec)
		if down <= 0 && up <= 0 {
			continue
		}
		for name := range flat {
			if producedBy(name, t.metrics) {
				out[name] = report.TimerRange{Down: down, Up: up, By: t.what + ": " + why}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// producedBy reports whether metric is one of names (a name ending in "." is a prefix).
func producedBy(metric string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool {
		return metric == n || strings.HasSuffix(n, ".") && strings.HasPrefix(metric, n)
	})
}

// perWakeUp is what other processes made one wake-up of kalab's threads wait, on average
// (real ms): the mean wait per slice times the neighbours' share of the wait. 0 when the
// record does not say.
func perWakeUp(t *report.Timing) float64 {
	if t.RunQueueMs == nil || t.CPUWaitMs == nil || t.CPUWaitNeighboursMs == nil || *t.CPUWaitMs <= 0 {
		return 0
	}
	return *t.RunQueueMs * NeighbourShare(t)
}

// idleCloseReach: a real server's idle close is later than its timeout by at most what
// its thread waited for a core when the timer was due, which is part of everything the
// program's threads waited behind other processes over the run (a bound, not an
// estimate). The proxy stamps the close when its reader goroutine runs, which is later by
// that goroutine's wait to run: at most the longest wait of the run (the sched source's
// max), of which the neighbours' share counts. Lateness only adds, so the model's value
// is lower, never higher.
func idleCloseReach(_ scenario.Settings, r *report.Run) (float64, float64, string) {
	t := r.Timing
	if t.ServerCPUWaitNeighboursMs == nil {
		return 0, 0, ""
	}
	proxy := proxyLate(t)
	d := (*t.ServerCPUWaitNeighboursMs + proxy) / timeScale(r)
	why := fmt.Sprintf("the program's threads waited %.1f ms for a core behind other processes during the run, "+
		"and the proxy that sees its close up to %.1f ms", *t.ServerCPUWaitNeighboursMs, proxy)
	return d, 0, why
}

// proxyLate is how late (real ms) the proxy could have stamped a real server's close
// because of other processes: the stamp is one more wake-up of kalab's, so the longest
// any of the run's measured wake-ups was late (the link's and the schedule's timers, whose
// threads the kernel can hold off a core, and a goroutine's wait to run), the neighbours'
// share of it. An estimate, as a wake-up's wait is one draw of the same machine. Measured
// beside two busy loops: a Node close 56.4 ms late with its threads' wait at 26.5 ms, the
// link's timers up to 31.7 ms late, and goroutines' waits up to 5.2 ms.
func proxyLate(t *report.Timing) float64 {
	if t.CPUWaitMs == nil || t.CPUWaitNeighboursMs == nil || *t.CPUWaitMs <= 0 {
		return 0
	}
	longest := 0.0
	for _, src := range []string{SrcLink, SrcSchedule, srcSched} {
		longest = max(longest, t.Sources[src].Max)
	}
	return longest * NeighbourShare(t)
}

// acceptReach: the accept loop waits on a timer and then on the accept for each
// connection, two wake-ups, each of which other processes could have delayed by
// perWakeUp; over every connection of the run that stretches the loop by up to that
// (never more than all the neighbours' wait of the run), and each accept_delay of it is
// one accept more or fewer before a client's timeout or a SYN's retry. The counts the
// queue decides move together by that many, either way (a slow loop drops more SYNs; a
// client whose own timers are late gives up later): an estimate, as the mean per
// wake-up is.
func acceptReach(st scenario.Settings, r *report.Run) (float64, float64, string) {
	t := r.Timing
	wake := perWakeUp(t)
	if wake <= 0 {
		return 0, 0, ""
	}
	stretch := min(2*r.Metrics.Connections*wake, *t.CPUWaitNeighboursMs)
	per := float64(st.Server.AcceptDelay.D()) / float64(time.Millisecond) * timeScale(r)
	k := math.Floor(stretch / per) // a loop less than one accept behind lost none
	why := fmt.Sprintf("%.0f connections, 2 wake-ups each, %.3f ms a wake-up behind other processes: "+
		"the loop up to %.1f ms late, %.0f accepts of %.3f ms", r.Metrics.Connections, wake, stretch, k, per)
	return k, k, why
}

// timeScale is r's time scale, 1 when unset.
func timeScale(r *report.Run) float64 {
	if r.TimeScale <= 0 {
		return 1
	}
	return r.TimeScale
}

// timerPoints are where in each run's range a check is evaluated: its ends and middles
// each way (negative: raised by that share of Up; positive: lowered by that share of Down).
var timerPoints = []float64{-1, -0.5, 0, 0.5, 1}

// moved is the flat metrics of r with the metrics reads of its timer ranges moved to point
// f of their ranges. The metrics a timer produces move together (one accept fewer is one
// connection fewer through the queue and one timeout more), and none below 0: they are
// lowered by no more than the lowest of them is, so a relation between two of them holds
// wherever it held.
func moved(r *report.Run, reads []string, f float64) map[string]float64 {
	m := r.Metrics.Flat()
	floor := math.Inf(1)
	for _, name := range reads {
		floor = min(floor, max(m[name], 0))
	}
	for _, name := range reads {
		rg := r.Timing.TimerRanges[name]
		switch {
		case f < 0:
			m[name] -= f * rg.Up
		case f > 0 && rg.Down > 0:
			m[name] -= min(f*rg.Down, floor)
		}
	}
	return m
}

// timerReads lists the metrics of variant's run (variant "" for an expect check) that a
// reads and that have a timer range.
func timerReads(a scenario.Assertion, r *report.Run, variant string) []string {
	if r == nil || r.Timing == nil {
		return nil
	}
	var out []string
	for _, ref := range a.Refs() {
		if _, ok := r.Timing.TimerRanges[ref.Metric]; ok && ref.Variant == variant {
			out = append(out, ref.Metric)
		}
	}
	return out
}

// expectTimerFlip returns, for the first expect check whose verdict changes somewhere in
// the timer ranges of the metrics it reads, why the run has no verdict; "" when none.
func expectTimerFlip(expect []scenario.Assertion, rec *report.Run) string {
	for _, a := range expect {
		reads := timerReads(a, rec, "")
		if len(reads) == 0 {
			continue
		}
		verdict, err := a.Eval(rec.Metrics)
		if err != nil {
			continue
		}
		for _, f := range timerPoints {
			if ok, err := a.Eval(check.FromFlat(moved(rec, reads, f))); err == nil && ok != verdict {
				return fmt.Sprintf("%s could change the expect check at %s:%d (%s): %s", CPUUnjudged,
					a.File, a.Line, a.Source, rangesWhy(rec, "", reads))
			}
		}
	}
	return ""
}

// compareTimerFlip evaluates a compare at every combination of its runs' points and, when
// its verdict changes, says why it cannot be given; "" when it holds.
func compareTimerFlip(a scenario.Assertion, runs map[string]*report.Run, verdict bool) string {
	var variants []string
	for _, v := range slices.Sorted(maps.Keys(runs)) {
		if len(timerReads(a, runs[v], v)) > 0 {
			variants = append(variants, v)
		}
	}
	if len(variants) == 0 {
		return ""
	}
	at := map[string]float64{}
	lookup := func(name string) (check.Metrics, bool) {
		r, ok := runs[name]
		if !ok {
			return check.Metrics{}, false
		}
		if f, in := at[name]; in {
			return check.FromFlat(moved(r, timerReads(a, r, name), f)), true
		}
		return r.Metrics, true
	}
	if !flipsSomewhere(variants, at, func() bool { ok, err := a.EvalCompare(lookup); return err == nil && ok != verdict }) {
		return ""
	}
	var parts []string
	for _, v := range variants {
		parts = append(parts, rangesWhy(runs[v], v, timerReads(a, runs[v], v)))
	}
	return CPUUnjudged + " could change this check's verdict (" + strings.Join(parts, "; ") +
		"): run it alone, or on a less busy machine"
}

// flipsSomewhere walks every combination of the variants' points (setting at) and reports
// whether flipped is true at one of them.
func flipsSomewhere(variants []string, at map[string]float64, flipped func() bool) bool {
	if len(variants) == 0 {
		return flipped()
	}
	for _, f := range timerPoints {
		at[variants[0]] = f
		if flipsSomewhere(variants[1:], at, flipped) {
			return true
		}
	}
	delete(at, variants[0])
	return false
}

// rangesWhy says how far each metric could have moved and by which timer.
func rangesWhy(r *report.Run, variant string, metrics []string) string {
	var parts []string
	for _, m := range slices.Compact(slices.Sorted(slices.Values(metrics))) {
		rg := r.Timing.TimerRanges[m]
		name := m
		if variant != "" {
			name = variant + " " + m
		}
		parts = append(parts, fmt.Sprintf("%s %g could be %g to %g (%s)", name, r.Metrics.Flat()[m],
			max(r.Metrics.Flat()[m]-rg.Down, 0), r.Metrics.Flat()[m]+rg.Up, rg.By))
	}
	return strings.Join(parts, "; ")
}

// ServerTimerLate is the reason a run whose counts turn on a real server program's idle
// close has no verdict, "" when it has one. The count rule gives the idle close half the
// gap between a pause and the timeout it races (the idle_close limits, timing.go), but a
// real program's close is its own timer, which no source records; what the CPU other
// processes took could have made it late is bounded as for its idle close metric
// (idleCloseReach), and judged against those limits: over them, a connection the program
// would have closed before a burst could have been reused, and the counts say so.
func ServerTimerLate(tol Tolerance, t *report.Timing) string {
	if t.ServerCPUWaitNeighboursMs == nil {
		return ""
	}
	late := *t.ServerCPUWaitNeighboursMs + proxyLate(t)
	for _, l := range tol.Of(SrcIdleClose) {
		if limit := float64(l.D) / float64(time.Millisecond); late > limit {
			return fmt.Sprintf("the real server's own idle timer could have fired %.2f ms late (its threads waited %.2f ms for a core behind other processes, "+
				"and the proxy that sees its close up to %.2f ms) against a tolerance of %.2f ms set by %s",
				late, *t.ServerCPUWaitNeighboursMs, late-*t.ServerCPUWaitNeighboursMs, limit, l.By)
		}
	}
	return ""
}

// ReadsRealTimer reports whether metric, read of a run with settings st, is one a real
// timer produces (realTimers) on a clock that may be real: a check on it can be left
// without a verdict by the CPU other processes took, so its run is worth rerunning alone.
func ReadsRealTimer(metric string, st scenario.Settings) bool {
	if st.Clock == scenario.ClockVirtual {
		return false
	}
	return slices.ContainsFunc(realTimers, func(t realTimer) bool { return t.applies(st) && producedBy(metric, t.metrics) })
}
