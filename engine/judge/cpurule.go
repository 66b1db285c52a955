package judge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// The CPU-pressure rule per check. Timers see how late a wake-up was; they do
// not see a TLS handshake or a parser take longer because a core was busy, nor a goroutine
// woken by a socket wait for one, and that time lands in a request's latency (at a time
// scale of 0.05, twenty times over in scenario time). A run records how long kalab's
// threads waited for a core each time they got one (timing.run_queue_ms, lag.RunQueue)
// and which share of their wait the machine's other processes caused
// (cpu_wait_neighbours_ms of cpu_wait_ms, lag.CPUWait.Split). The own share, kalab's
// threads queueing behind each other, is in every run of it, alone too, and its checks
// were written against runs that had it; the neighbours' share is the machine's other
// work. The split is the whole process's: with another run in flight in the same process
// the "own" share holds that run's threads too, so such a run records all of its wait as
// the neighbours' (report.Timing.BesideOtherRuns; at --parallel 16 a total_ms compare of
// file 07 failed on 544 ms of "own" wait that was other runs'). A request waits in turn through two wake-ups per link trip that no timer measures
// (the proxy's reader on the chunk, the far end's reader on its delivery; the delivery
// itself is the link's timer) and one more (the client on its answer), so other processes
// could have added the neighbours' part of the mean wait times (2 x link_trips + 1) to
// each request, in scenario time (the mean exactly, a percentile by the mean: an
// estimate). The per-run figure is used, not the process's
// total wait over the requests: that sums every thread of every run in flight. An expect
// or compare check is evaluated over every value that could have added to the latency_ms
// metrics it reads, as compares are over their link's lateness (comparemargin.go): a
// verdict that changes inside that range is not given. An expect check makes its run noisy
// (rerun alone, where no other run's program competes); a compare is not evaluated.

// neighbourShift is how far (scenario ms) other processes' CPU could have moved each
// request of r; 0 when the record does not say.
func neighbourShift(r *report.Run) float64 {
	t := r.Timing
	if t == nil || t.RunQueueMs == nil || t.CPUWaitMs == nil || t.CPUWaitNeighboursMs == nil || *t.CPUWaitMs <= 0 {
		return 0
	}
	scale := r.TimeScale
	if scale <= 0 {
		scale = 1
	}
	return *t.RunQueueMs * NeighbourShare(t) * float64(wakeUps(t)) / scale
}

// wakeUps is how many wake-ups no timer measures a request waits through in turn.
func wakeUps(t *report.Timing) int { return 2*t.LinkTrips + 1 }

// NeighbourShare is the share of kalab's wait for a core that other processes caused.
func NeighbourShare(t *report.Timing) float64 {
	return min(*t.CPUWaitNeighboursMs / *t.CPUWaitMs, 1)
}

// cpuWhy says what the CPU wait of r was, own and neighbours', for a reason.
func cpuWhy(r *report.Run) string {
	t := r.Timing
	return fmt.Sprintf("kalab's threads waited %.3f ms for a core each time they got one, %.0f%% of it behind other processes "+
		"(the rest, its own threads queueing behind each other, is not counted): over %d wake-ups a request waits through, "+
		"up to %.2f ms a request in scenario time", *t.RunQueueMs, 100*NeighbourShare(t), wakeUps(t), neighbourShift(r))
}

// LatencyRefs lists the latency_ms metrics an assertion reads.
func LatencyRefs(a scenario.Assertion) []string {
	var out []string
	for _, ref := range a.Refs() {
		if strings.HasPrefix(ref.Metric, "latency_ms.") {
			out = append(out, ref.Metric)
		}
	}
	return out
}

// The wall-time metrics (total_ms, and rps, which is requests over it) add no per-request
// wake-ups: they are the run's own wall time, which stretches by whatever other processes
// took from kalab's threads while they could have run. A run records that time
// (cpu_wait_neighbours_ms); as if no two threads waited at once, it bounds what the wall
// time could have gained from the machine's other work, so a check on total_ms or rps is
// evaluated over that range too: a CPU-bound finding (a burst of thousands of connections)
// measured beside a busy neighbour is given no verdict rather than a wrong one.

// isWall reports whether metric is made of the run's whole wall time.
func isWall(metric string) bool { return metric == "total_ms" || metric == "rps" }

// neighbourWall is how much (scenario ms) other processes could have added to r's wall
// time: every millisecond kalab's threads waited for a core behind them, never more than
// the run's total_ms. 0 when the record does not say.
func neighbourWall(r *report.Run) float64 {
	t := r.Timing
	if t == nil || t.CPUWaitNeighboursMs == nil || *t.CPUWaitNeighboursMs <= 0 {
		return 0
	}
	scale := r.TimeScale
	if scale <= 0 {
		scale = 1
	}
	return min(*t.CPUWaitNeighboursMs/scale, r.Metrics.TotalMs)
}

// lowerMetric takes d (scenario ms) of lateness or stolen CPU off metric in the flat
// metrics f: a latency never below floor (lowered); total_ms never below 0; rps as the
// requests over the lowered total_ms.
func lowerMetric(f map[string]float64, metric string, d, floor float64) {
	switch metric {
	case "total_ms":
		f[metric] = max(f[metric]-d, 0)
	case "rps":
		if total := f["total_ms"] - d; total > 0 {
			f[metric] = f["requests"] / (total / 1000)
		}
	default:
		f[metric] = lowered(f[metric], d, floor)
	}
}

// ExpectCPUFlip returns, for the first of a run's expect checks whose verdict the
// neighbours' CPU wait could change, why the run has no verdict; "" when none.
func ExpectCPUFlip(expect []scenario.Assertion, rec *report.Run) string {
	if rec.Virtual() {
		return "" // virtual: not judged; the CPU its threads waited for moved no simulated time
	}
	if why := expectTimerFlip(expect, rec); why != "" {
		return why // a real timer's metric (realtimers.go)
	}
	d, wall := neighbourShift(rec), neighbourWall(rec)
	if d <= 0 && wall <= 0 {
		return ""
	}
	floor := latencyFloor(rec)
	for _, a := range expect {
		shifts := map[string]float64{}
		for _, ref := range a.Refs() {
			switch {
			case strings.HasPrefix(ref.Metric, "latency_ms.") && d > 0:
				shifts[ref.Metric] = d
			case isWall(ref.Metric) && wall > 0:
				shifts[ref.Metric] = wall
			}
		}
		if len(shifts) == 0 {
			continue
		}
		verdict, err := a.Eval(rec.Metrics)
		if err != nil {
			continue
		}
		for _, f := range fractions {
			m := rec.Metrics.Flat()
			for ref, by := range shifts {
				lowerMetric(m, ref, f*by, floor)
			}
			if ok, err := a.Eval(check.FromFlat(m)); err == nil && ok != verdict {
				return fmt.Sprintf("CPU pressure could change the expect check at %s:%d (%s): %s",
					a.File, a.Line, a.Source, cpuShiftWhy(rec, shifts))
			}
		}
	}
	return ""
}

// cpuShiftWhy says how far the neighbours' CPU could have moved each metric of shifts.
func cpuShiftWhy(rec *report.Run, shifts map[string]float64) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(shifts)) {
		parts = append(parts, fmt.Sprintf("%s by up to %.2f ms", m, shifts[m]))
	}
	return cpuStolenWhy(rec, shifts) + ", which could move " + strings.Join(parts, ", ")
}

// cpuStolenWhy says what other processes took from a run whose metrics of shifts they
// could have moved: the per-request wait (cpuWhy) for latencies, the whole wait for the
// wall-time metrics.
func cpuStolenWhy(rec *report.Run, shifts map[string]float64) string {
	var why []string
	latency := false
	for m := range shifts {
		latency = latency || strings.HasPrefix(m, "latency_ms.")
	}
	if latency && neighbourShift(rec) > 0 {
		why = append(why, cpuWhy(rec))
	}
	if shifts["total_ms"] > 0 || shifts["rps"] > 0 {
		why = append(why, fmt.Sprintf("other processes kept kalab's threads from a core for %.1f ms in all during the run", *rec.Timing.CPUWaitNeighboursMs))
	}
	return strings.Join(why, "; ")
}

// latencyFloor is the least (scenario ms) any latency metric of r can be in the model: one
// round trip of its link (Timing.LatencyFloorMs), which every request crosses there and
// back. 0 when r has no link, or when a request failed or got a 5xx: a failure can end
// before its round trip, so the floor then says nothing of the statistics.
func latencyFloor(r *report.Run) float64 {
	if r.Timing == nil || r.Timing.LatencyFloorMs == nil {
		return 0
	}
	return floorIfAllAnswered(r.Metrics, *r.Timing.LatencyFloorMs)
}

// floorIfAllAnswered is floor (scenario ms) when every request of m got a non-5xx answer,
// and 0 otherwise: a failure can end before its round trip.
func floorIfAllAnswered(m check.Metrics, floor float64) float64 {
	if m.Errors > 0 || m.Status5xx > 0 {
		return 0
	}
	return floor
}

// lowered is a latency v less what lateness or CPU wait could have added to it (d), never
// below the floor the link sets (latencyFloor) nor below 0: lateness only adds, and no
// request is faster than its round trip, so the model's value lies in [lowered, v].
func lowered(v, d, floor float64) float64 {
	return max(v-d, min(floor, v), 0)
}
