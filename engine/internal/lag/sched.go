package lag

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedMetric is the Go runtime's histogram of how long goroutines were runnable before
// they ran: the time a goroutine waited for a P (and so for a thread and a core).
const schedMetric = "/sched/latencies:seconds"

// Sched measures, over a span, how long this process's goroutines waited to run once they
// could. A goroutine that waits is late at whatever it was about to do: a client about to
// send the next request of a burst, a server about to read one. Most waits are
// microseconds; a process crowded by thousands of runnable goroutines (a 5,000-connection
// burst beside it) or starved of cores can leave one waiting for hundreds of milliseconds,
// which no timer of the model sees unless it is the one waiting. The figure is the
// process's: runs in parallel share it.
type Sched struct {
	at []uint64
	ok bool
}

// StartSched begins a span.
func StartSched() Sched {
	h, ok := readSched()
	if !ok {
		return Sched{}
	}
	return Sched{at: h.Counts, ok: true}
}

// Into adds the span's waits so far to r, each at its bucket's upper bound (the runtime's
// buckets are exponential, so a wait is reported at most a bucket's width high; one in the
// last, unbounded bucket at its lower bound). It adds nothing where the runtime does not say.
func (s Sched) Into(r *Recorder) {
	if !s.ok || r == nil {
		return
	}
	h, ok := readSched()
	if !ok || len(h.Counts) != len(s.at) {
		return
	}
	for i, c := range h.Counts {
		n := c - s.at[i]
		if n == 0 {
			continue
		}
		v := h.Buckets[i+1]
		if math.IsInf(v, 1) {
			v = h.Buckets[i]
		}
		r.addN(time.Duration(v*float64(time.Second)), n)
	}
}

func readSched() (*metrics.Float64Histogram, bool) {
	sample := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil, false
	}
	return sample[0].Value.Float64Histogram(), true
}
