package admit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/clock"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// Window is how long the scheduler watches the runs in flight before it starts
// another: long enough for a link at 10 ms RTT to fire dozens of timers.
const Window = 100 * time.Millisecond

// admitShare is the share of a source's timers that may be later than the limit it is
// watched at, in a window that still counts as headroom: a limit on the p99 allows 1%, on
// the p50 or the mean half, on the max none.
func admitShare(stat string) float64 {
	switch stat {
	case judge.StatMax:
		return 0
	case judge.StatP50, judge.StatMean:
		return 0.5
	}
	return 0.01
}

// watchedLimit is the limit a source is watched at while it runs: the one on its highest
// statistic (max, then p99, then p50 or mean), which a stall crosses first.
func watchedLimit(ls []judge.Limit) (judge.Limit, bool) {
	rank := map[string]int{judge.StatMax: 3, judge.StatP99: 2, judge.StatP50: 1, judge.StatMean: 1}
	var best judge.Limit
	ok := false
	for _, l := range ls {
		if !ok || rank[l.Stat] > rank[best.Stat] || (rank[l.Stat] == rank[best.Stat] && l.D < best.D) {
			best, ok = l, true
		}
	}
	return best, ok
}

// Admission starts runs by measured headroom: another run starts only while the runs in
// flight keep their timers inside their tolerance; --parallel stays the ceiling.
type Admission struct {
	gate sync.Mutex // one run is admitted at a time, so a window's verdict admits one run
	mu   sync.Mutex
	runs map[*judge.Timers]*watched
}

type watched struct {
	recs  []*lag.Recorder
	share []float64     // admitShare of each recorder's watched limit
	last  []uint64      // over and n at the previous look, two per recorder
	least time.Duration // the tightest watched limit (0: none)
}

func NewAdmission() *Admission {
	return &Admission{runs: map[*judge.Timers]*watched{}}
}

// Admit waits for headroom (see wait), then starts watching the run's judged sources. It
// returns false when ctx ends first.
func (a *Admission) Admit(ctx context.Context, tm *judge.Timers, tol judge.Tolerance) (ok bool, backoffs int) {
	a.gate.Lock()
	defer a.gate.Unlock()
	if ok, backoffs = a.wait(ctx); ok {
		a.Add(tm, tol)
	}
	return ok, backoffs
}

// Add starts watching a run's judged sources.
func (a *Admission) Add(tm *judge.Timers, tol judge.Tolerance) {
	w := &watched{}
	for name, r := range tm.TimerSources() {
		if l, ok := watchedLimit(tol.Of(name)); ok {
			r.Watch(l.D)
			if w.least == 0 || l.D < w.least {
				w.least = l.D
			}
			w.recs = append(w.recs, r)
			w.share = append(w.share, admitShare(l.Stat))
			w.last = append(w.last, 0, 0)
		}
	}
	a.mu.Lock()
	a.runs[tm] = w
	a.mu.Unlock()
}

func (a *Admission) Remove(tm *judge.Timers) {
	a.mu.Lock()
	delete(a.runs, tm)
	a.mu.Unlock()
}

// healthy reports whether, since the previous look, every run in flight kept each judged
// source's timers inside its watched limit, but for the share that limit allows.
func (a *Admission) healthy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ok := true
	for _, w := range a.runs {
		for i, r := range w.recs {
			over, n := r.Over()
			dOver, dN := over-w.last[2*i], n-w.last[2*i+1]
			w.last[2*i], w.last[2*i+1] = over, n
			if dN > 0 && float64(dOver) > w.share[i]*float64(dN) {
				ok = false
			}
		}
	}
	return ok
}

// absorbs is the tightest limit any run in flight watches its timers at, and false when
// none watches one.
func (a *Admission) absorbs() (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var least time.Duration
	for _, w := range a.runs {
		if w.least > 0 && (least == 0 || w.least < least) {
			least = w.least
		}
	}
	return least, least > 0
}

// cpuRoom reports whether, over the window q began, this process's threads waited for a
// core less per slice (lag.RunQueue) than the tightest limit of the runs in flight: a
// timer whose goroutine waits that long for a core is late by that much, so a window
// above it has no room for another run's computing (runs are admitted by their CPU wait,
// not only by their timers). A system that does not say leaves the timers to
// decide.
func (a *Admission) cpuRoom(q lag.RunQueue) bool {
	mean, ok := q.Mean()
	least, watched := a.absorbs()
	return !ok || !watched || mean <= least
}

// busy reports how many runs are in flight.
func (a *Admission) busy() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.runs)
}

// wait blocks until another run may start: at once when nothing runs, otherwise after a
// window in which the runs in flight kept their timing and the process's threads waited
// for a core less per slice than the runs' tightest limit (cpuRoom). It returns false when ctx ends.
// backoffs counts the windows that found no headroom.
func (a *Admission) wait(ctx context.Context) (ok bool, backoffs int) {
	if a.busy() == 0 {
		return true, 0
	}
	// Each window is a whole admitWindow from its start (a ticker would hand a goroutine
	// that was kept from running a tick at once, and a window of nothing).
	t := time.NewTimer(Window)
	defer t.Stop()
	for {
		a.healthy() // start the window now
		q := lag.StartRunQueue()
		t.Reset(Window)
		select {
		case <-ctx.Done():
			return false, backoffs
		case <-t.C:
		}
		healthy, room := a.healthy(), a.cpuRoom(q)
		if a.busy() == 0 || (healthy && room) {
			return true, backoffs
		}
		backoffs++
	}
}

// Headroom probes: probeTimers timers probeGap apart on the precise clock the model's
// timers wait on, one window of admitWindow.
const (
	probeGap    = 2 * time.Millisecond
	probeTimers = int(Window / probeGap)
)

// WaitHeadroom waits, up to budget, for a window in which probe timers on the precise
// clock keep inside the tightest limit the run's timer sources are watched at (see
// watchedLimit and admitShare): the machine's own lateness, with none of kalab's runs in
// flight. It says what the last probe measured, and whether it found the headroom.
func WaitHeadroom(ctx context.Context, tol judge.Tolerance, budget time.Duration) (string, bool) {
	var lim judge.Limit
	found := false
	for _, src := range []string{judge.SrcLink, judge.SrcSchedule, judge.SrcIdleClose} {
		if l, ok := watchedLimit(tol.Of(src)); ok && (!found || l.D < lim.D) {
			lim, found = l, true
		}
	}
	if !found {
		return "admitted (no timer limit to probe)", true
	}
	deadline := time.Now().Add(budget)
	for {
		s := probe(ctx)
		got := judge.StatOf(s, lim.Stat)
		desc := fmt.Sprintf("headroom probe: timers %.2f ms late at the %s (max %.2f ms, of %d) against the %s %s limit of %.2f ms",
			ms(got), lim.Stat, ms(s.Max), s.N, lim.Src, lim.Stat, ms(lim.D))
		if got <= lim.D {
			return desc, true
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return desc, false
		}
	}
}

// probe fires probeTimers timers on the precise clock in turn and returns their lateness.
func probe(ctx context.Context) lag.Summary {
	var r lag.Recorder
	var s clock.Sleeper
	due := time.Now()
	for range probeTimers {
		due = due.Add(probeGap)
		if !s.Until(due, ctx.Done()) {
			break
		}
		r.Since(due)
	}
	return r.Summary()
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
