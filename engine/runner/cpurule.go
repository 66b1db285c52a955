package runner

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// The CPU-pressure rule per check (issue 28). Timers see how late a wake-up was; they do
// not see a TLS handshake or a parser take longer because a core was busy, and that time
// lands in a request's latency (at a time scale of 0.05, twenty times over in scenario
// time). A run records how long its threads waited for a core (timing.cpu_wait_ms) and
// which part of it the machine's other processes caused (cpu_wait_neighbours_ms,
// lag.CPUWait.Split). The run's own part, kalab's threads queueing behind each other, is
// in every run of it, alone too, and its checks were written against runs that had it;
// the neighbours' part is the machine's other work. So an expect or compare check is
// evaluated over every value the neighbours' wait could have added to the latency_ms
// metrics it reads (per request, in scenario time; the mean exactly, a percentile by the
// mean, an estimate), as compares are over their link's lateness (comparemargin.go): a
// verdict that changes inside that range is not given. An expect check makes its run
// noisy (rerun alone, where no other run's program competes); a compare is not evaluated.

// neighbourShift is how far (scenario ms) other processes' CPU could have moved each
// request of r: the neighbours' wait over the requests, at the run's time scale.
func neighbourShift(r *report.Run) float64 {
	t := r.Timing
	if t == nil || t.CPUWaitNeighboursMs == nil || r.Metrics.Requests <= 0 {
		return 0
	}
	scale := r.TimeScale
	if scale <= 0 {
		scale = 1
	}
	return *t.CPUWaitNeighboursMs / r.Metrics.Requests / scale
}

// cpuWhy says what the CPU wait of r was, own and neighbours', for a reason.
func cpuWhy(r *report.Run) string {
	own := 0.0
	if r.Timing.CPUWaitMs != nil {
		own = *r.Timing.CPUWaitMs - *r.Timing.CPUWaitNeighboursMs
	}
	return fmt.Sprintf("other processes made its threads wait %.1f ms for a core (%.2f ms per request in scenario time; "+
		"its own threads queueing behind each other, %.1f ms, are not counted)", *r.Timing.CPUWaitNeighboursMs, neighbourShift(r), own)
}

// latencyRefs lists the latency_ms metrics an assertion reads.
func latencyRefs(a scenario.Assertion) []string {
	var out []string
	for _, ref := range a.Refs() {
		if strings.HasPrefix(ref.Metric, "latency_ms.") {
			out = append(out, ref.Metric)
		}
	}
	return out
}

// expectCPUFlip returns, for the first of a run's expect checks whose verdict the
// neighbours' CPU wait could change, why the run has no verdict; "" when none.
func expectCPUFlip(expect []scenario.Assertion, rec *report.Run) string {
	d := neighbourShift(rec)
	if d <= 0 {
		return ""
	}
	for _, a := range expect {
		refs := latencyRefs(a)
		if len(refs) == 0 {
			continue
		}
		verdict, err := a.Eval(rec.Metrics)
		if err != nil {
			continue
		}
		for _, f := range fractions {
			m := rec.Metrics.Flat()
			for _, ref := range refs {
				m[ref] = max(m[ref]-f*d, 0)
			}
			if ok, err := a.Eval(check.FromFlat(m)); err == nil && ok != verdict {
				return fmt.Sprintf("CPU pressure could change the expect check at %s:%d (%s): %s, which could move %s by up to %.2f ms",
					a.File, a.Line, a.Source, cpuWhy(rec), strings.Join(refs, ", "), d)
			}
		}
	}
	return ""
}
