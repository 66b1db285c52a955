package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/lag"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Lag sources, as named in metrics (lag_ms.<source>) and in a run record's timing.
const (
	srcLink      = "link"
	srcSchedule  = "schedule"
	srcIdleClose = "idle_close"
)

// Tolerance rule (README "Runs that know when they are wrong"). A verdict about connection
// reuse turns on two kinds of margin: a latency is a whole number of round trips, and a
// reuse or a race turns on whether a pause ends before or after an idle timeout. A timer
// late by a fraction of those margins moves a latency by that fraction of an RTT, or moves a
// pause that fraction of the way toward the timeout it must not cross. So:
//
//   - link:       p99 lateness <= RTT/rttDivisor, and <= gap/gapDivisor
//   - schedule:   p99 lateness <= gap/gapDivisor
//   - idle_close: p99 lateness <= gap/gapDivisor
//
// where RTT and gap are in real time (after the time scale), and gap is the smallest
// distance between an end of the pause range (load.pause min and max) and a timeout that
// decides reuse (server.idle_timeout, client.idle_timeout, and the client's hint-derived
// timeout: server idle timeout or hint minus client.hint_buffer). A source no term applies
// to is recorded but not judged. Pairs exactly equal are skipped: a pause set exactly on a
// timeout is a coin toss that no precision decides.
const (
	rttDivisor = 10
	gapDivisor = 4
)

// tolFloor keeps a tolerance from asking for better than the clocks themselves can
// promise: the link's precise clock is good to tens of microseconds, Go timers to about a
// millisecond; asking for less than this would mark every run noisy on any machine.
const tolFloor = 200 * time.Microsecond

// timers are one run's lateness recorders.
type timers struct {
	link, schedule, idle, queue lag.Recorder
}

// sources returns the recorders by source name.
func (t *timers) sources() map[string]*lag.Recorder {
	return map[string]*lag.Recorder{srcLink: &t.link, srcSchedule: &t.schedule, srcIdleClose: &t.idle}
}

// addMetrics writes lag_ms.* and queue_wait_ms.* in scenario time.
func (t *timers) addMetrics(flat map[string]float64, scale float64) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / scale }
	put := func(prefix string, s lag.Summary) {
		flat[prefix+".p50"], flat[prefix+".p99"], flat[prefix+".max"] = ms(s.P50), ms(s.P99), ms(s.Max)
	}
	for name, r := range t.sources() {
		put("lag_ms."+name, r.Summary())
	}
	put("queue_wait_ms", t.queue.Summary())
}

// tolerances derives, from a run's settings, the p99 lateness each source may reach in
// real time before the run's verdicts are not to be trusted.
func tolerances(st scenario.Settings, scale scaler) map[string]time.Duration {
	out := map[string]time.Duration{}
	tighten := func(src string, d time.Duration) {
		d = max(d, tolFloor)
		if cur, ok := out[src]; !ok || d < cur {
			out[src] = d
		}
	}
	if !direct(st) && st.Network.RTT > 0 {
		tighten(srcLink, scale.d(st.Network.RTT)/rttDivisor)
	}
	if gap, ok := pauseGap(st); ok {
		g := scale.d(scenario.Duration(gap)) / gapDivisor
		if !direct(st) {
			tighten(srcLink, g)
		}
		tighten(srcSchedule, g)
		if st.Server.IdleTimeout > 0 {
			tighten(srcIdleClose, g)
		}
	}
	return out
}

// pauseGap is the smallest distance, in scenario time, between an end of the pause range
// and a timeout that decides reuse; ok is false for a run without pauses or timeouts.
func pauseGap(st scenario.Settings) (time.Duration, bool) {
	l := st.Load
	if l.Burst <= 0 || l.Burst >= l.Requests || l.Pause.Max <= 0 {
		return 0, false
	}
	var timeouts []time.Duration
	if t := st.Server.IdleTimeout.D(); t > 0 {
		timeouts = append(timeouts, t)
		if st.Client.HonorHint && st.Server.KeepaliveHint.Mode == scenario.HintOn {
			timeouts = append(timeouts, t-st.Client.HintBuffer.D())
		}
	}
	if st.Client.HonorHint && st.Server.KeepaliveHint.Mode == scenario.HintDuration {
		timeouts = append(timeouts, st.Server.KeepaliveHint.Duration.D()-st.Client.HintBuffer.D())
	}
	if t := st.Client.IdleTimeout.D(); t > 0 {
		timeouts = append(timeouts, t)
	}
	best, ok := time.Duration(0), false
	for _, p := range []time.Duration{l.Pause.Min.D(), l.Pause.Max.D()} {
		for _, t := range timeouts {
			if t <= 0 {
				continue
			}
			g := p - t
			if g < 0 {
				g = -g
			}
			if g == 0 {
				continue
			}
			if !ok || g < best {
				best, ok = g, true
			}
		}
	}
	return best, ok
}

// judgeTiming builds a run's timing record: each source's lateness against its tolerance.
func judgeTiming(t *timers, tol map[string]time.Duration) *report.Timing {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	tm := &report.Timing{Sources: map[string]report.TimingSource{}, Attempt: 1}
	var over []string
	for name, r := range t.sources() {
		s := r.Summary()
		src := report.TimingSource{N: s.N, P50: ms(s.P50), P99: ms(s.P99), Max: ms(s.Max)}
		if limit, ok := tol[name]; ok {
			v := ms(limit)
			src.ToleranceMs = &v
			if s.N > 0 && s.P99 > limit {
				over = append(over, fmt.Sprintf("%s timers fired %.2f ms late (p99 of %d, max %.2f ms) against a tolerance of %.2f ms",
					name, ms(s.P99), s.N, ms(s.Max), v))
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

// queueWait records how long after its scheduled start a request really began, and
// returns the scheduled instant (zero when the context came from elsewhere).
func (t *timers) queueWait(ctxScheduled time.Time, ok bool, started time.Time) time.Time {
	if !ok || started.IsZero() {
		return time.Time{}
	}
	t.queue.Add(started.Sub(ctxScheduled))
	return ctxScheduled
}
