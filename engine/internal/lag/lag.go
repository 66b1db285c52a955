// Package lag records how late the timers that carry a run's model fired against their plan:
// the link's delayed chunks, the schedule's starts and pauses, the server's idle closes. It
// also measures what else the machine took from a run (goroutine stalls, Sched; the wait for
// a core, CPUWait; CPU pressure) and the process's CPU time (ProcessCPU), which engine/metrics
// and the benchmarks read too.
package lag

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
)

// Buckets: exact microseconds below 2^subBits, then 2^(subBits-1) buckets per octave, so a
// reported percentile is within 1/64 of the true value; the values are lateness, where a
// precision of a few percent is plenty and a fixed array keeps Add lock-free.
const (
	subBits   = 6
	subCount  = 1 << subBits
	halfCount = subCount / 2
	nBuckets  = (64-subBits+1)*halfCount + halfCount
)

// Recorder counts lateness samples. The zero value is ready; a nil *Recorder ignores every
// call, so instrumented code needs no checks. It is safe for concurrent use.
type Recorder struct {
	counts [nBuckets]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64
	sum    atomic.Int64 // nanoseconds, for the mean: a total (total_ms) adds every lateness
	// over counts samples above Watch, for a scheduler that watches runs in flight.
	watch atomic.Int64
	over  atomic.Uint64
	// hold is lateness a test adds on purpose (see Hold).
	hold atomic.Int64
	ev   events
}

// Add records one timer that fired late by d; an early or on-time timer counts as 0.
func (r *Recorder) Add(d time.Duration) {
	if r == nil {
		return
	}
	d = max(d, 0)
	us := uint64(d / time.Microsecond)
	r.counts[index(us)].Add(1)
	r.n.Add(1)
	r.sum.Add(int64(d))
	for m := r.max.Load(); int64(d) > m && !r.max.CompareAndSwap(m, int64(d)); m = r.max.Load() {
	}
	if w := r.watch.Load(); w > 0 && int64(d) > w {
		r.over.Add(1)
	}
}

// addN records n samples of lateness d at once (a histogram taken from elsewhere).
func (r *Recorder) addN(d time.Duration, n uint64) {
	d = max(d, 0)
	us := uint64(d / time.Microsecond)
	r.counts[index(us)].Add(n)
	r.n.Add(n)
	r.sum.Add(int64(d) * int64(n))
	for m := r.max.Load(); int64(d) > m && !r.max.CompareAndSwap(m, int64(d)); m = r.max.Load() {
	}
	if w := r.watch.Load(); w > 0 && int64(d) > w {
		r.over.Add(n)
	}
}

// Since records the lateness of a timer planned for due and firing now.
func (r *Recorder) Since(due time.Time) {
	if r == nil {
		return
	}
	if h := time.Duration(r.hold.Load()) + r.heldOnce(due); h > 0 {
		// Every caller acts on the timer after Since returns (the link delivers its chunk,
		// the schedule starts its burst), so this wait makes the timer really late.
		until := due.Add(h)
		for time.Now().Before(until) {
			runtime.Gosched()
		}
	}
	r.AddAt(due, time.Since(due))
}

// AddAt records one timer due at due that fired d late: Add, and the event when the
// recorder keeps events (KeepEvents).
func (r *Recorder) AddAt(due time.Time, d time.Duration) {
	if r == nil {
		return
	}
	r.Add(d)
	r.keep(due, d)
}

// Hold makes every later Since wait until d after its timer was due before it returns and
// records: lateness injected on purpose, for tests that prove what a tolerance absorbs.
// Since waits by spinning, so the lateness is d (plus whatever the machine adds), not a
// sleep's own lateness. 0 stops it.
func (r *Recorder) Hold(d time.Duration) {
	if r != nil {
		r.hold.Store(int64(max(d, 0)))
	}
}

// Watch makes the recorder count the samples later than limit (see Over); 0 stops counting.
func (r *Recorder) Watch(limit time.Duration) {
	if r != nil {
		r.watch.Store(int64(limit))
	}
}

// Over returns how many samples were later than the Watch limit, and how many there were.
func (r *Recorder) Over() (over, n uint64) {
	if r == nil {
		return 0, 0
	}
	return r.over.Load(), r.n.Load()
}

// Summary is a snapshot of a recorder, in real time.
type Summary struct {
	N    uint64
	P50  time.Duration
	P99  time.Duration
	Max  time.Duration
	Mean time.Duration
}

// Summary returns the percentiles of what was recorded; all zero when nothing was.
func (r *Recorder) Summary() Summary {
	if r == nil {
		return Summary{}
	}
	var counts [nBuckets]uint64
	var n uint64
	for i := range counts {
		counts[i] = r.counts[i].Load()
		n += counts[i]
	}
	s := Summary{N: n, Max: time.Duration(r.max.Load())}
	if n == 0 {
		return s
	}
	s.Mean = time.Duration(r.sum.Load() / int64(n))
	s.P50 = min(quantile(&counts, n, 0.50), s.Max)
	s.P99 = min(quantile(&counts, n, 0.99), s.Max)
	return s
}

// quantile returns the value at rank ceil(q*n) (nearest rank), as its bucket's midpoint.
func quantile(counts *[nBuckets]uint64, n uint64, q float64) time.Duration {
	rank := uint64(q*float64(n) + 0.999999)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return time.Duration(mid(i)) * time.Microsecond
		}
	}
	return 0
}

func index(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits
	return shift*halfCount + int(v>>uint(shift))
}

func mid(idx int) uint64 {
	if idx < subCount {
		return uint64(idx)
	}
	shift := idx/halfCount - 1
	lower := uint64(idx-shift*halfCount) << uint(shift)
	return lower + (uint64(1)<<uint(shift)-1)/2
}

// Probe measures how late a goroutine of this process wakes from a short sleep: the delay a
// busy machine adds to every goroutine, which a timer of the model does not see when it is
// the code after the timer that waits for a CPU.
type Probe struct {
	rec  Recorder
	stop chan struct{}
	done chan struct{}
}

// StartProbe starts sleeping every interval and recording the oversleep beyond the
// interval; Stop ends it.
func StartProbe(interval time.Duration) *Probe {
	p := &Probe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTimer(interval)
		defer t.Stop()
		for {
			due := time.Now().Add(interval)
			t.Reset(interval)
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.rec.Since(due)
			}
		}
	}()
	return p
}

// Stop ends the probe and returns what it measured.
func (p *Probe) Stop() Summary {
	close(p.stop)
	<-p.done
	return p.rec.Summary()
}

// Summary returns what the probe measured so far, without stopping it.
func (p *Probe) Summary() Summary { return p.rec.Summary() }
