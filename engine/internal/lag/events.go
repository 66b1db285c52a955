package lag

import (
	"sync"
	"sync/atomic"
	"time"
)

// An Event is one timer that fired late: when it was due and by how much it missed. A
// percentile over a run's timers cannot say whether its one late chunk fell where a count
// is decided (a pause next to an idle timeout) or anywhere else; the events can.
type Event struct {
	Due  time.Time
	Late time.Duration
}

// maxEvents bounds an event log: past it a recorder counts what it dropped (Events), and
// a judge that needs every event treats the log as incomplete.
const maxEvents = 1 << 16

// events is a recorder's log of late events, off until KeepEvents.
type events struct {
	min     atomic.Int64 // nanoseconds; 0: off
	mu      sync.Mutex
	list    []Event
	dropped uint64
	// holdQuiet, holdSkip and holdFor inject one late timer (HoldAfterQuiet); last is the
	// previous due (unix ns), quietSeen whether a quiet spell has passed, skipped how many
	// timers went by since, holdDone marks the hold spent.
	holdQuiet, holdSkip, holdFor, last atomic.Int64
	quietSeen, holdDone                atomic.Bool
	skipped                            atomic.Int64
}

// KeepEvents makes the recorder keep every timer at least min late, with when it was due
// (see Events); min must be positive.
func (r *Recorder) KeepEvents(min time.Duration) {
	if r != nil && min > 0 {
		r.ev.min.Store(int64(min))
	}
}

// Events returns the late events kept since KeepEvents, in the order they were recorded,
// and how many were dropped past the log's bound.
func (r *Recorder) Events() ([]Event, uint64) {
	if r == nil {
		return nil, 0
	}
	r.ev.mu.Lock()
	defer r.ev.mu.Unlock()
	return append([]Event(nil), r.ev.list...), r.ev.dropped
}

// keep logs one event when the recorder keeps events and it is late enough.
func (r *Recorder) keep(due time.Time, d time.Duration) {
	m := r.ev.min.Load()
	if m <= 0 || int64(d) < m {
		return
	}
	r.ev.mu.Lock()
	if len(r.ev.list) < maxEvents {
		r.ev.list = append(r.ev.list, Event{Due: due, Late: d})
	} else {
		r.ev.dropped++
	}
	r.ev.mu.Unlock()
}

// HoldAfterQuiet makes one Since wait d past its due time before it returns and records:
// the one due skip timers after the first that follows a spell of quiet (no timer due for
// at least quiet). A test injects one late timer where the plan puts it, the request that
// ends a pause (skip 0) or one further into the burst, whatever instant the run began.
func (r *Recorder) HoldAfterQuiet(quiet time.Duration, skip int, d time.Duration) {
	if r != nil {
		r.ev.holdQuiet.Store(int64(quiet))
		r.ev.holdSkip.Store(int64(skip))
		r.ev.holdFor.Store(int64(d))
		r.ev.last.Store(0)
		r.ev.skipped.Store(0)
		r.ev.quietSeen.Store(false)
		r.ev.holdDone.Store(false)
	}
}

// heldOnce is how long a Since due at due waits for HoldAfterQuiet: its d for the chosen
// timer, 0 otherwise. Timers due at once may race here; a test holds one in a quiet run.
func (r *Recorder) heldOnce(due time.Time) time.Duration {
	d := r.ev.holdFor.Load()
	if d <= 0 || r.ev.holdDone.Load() {
		return 0
	}
	at := due.UnixNano()
	prev := r.ev.last.Swap(at)
	if !r.ev.quietSeen.Load() {
		if prev == 0 || at-prev < r.ev.holdQuiet.Load() {
			return 0
		}
		r.ev.quietSeen.Store(true)
	}
	if r.ev.skipped.Add(1)-1 < r.ev.holdSkip.Load() || !r.ev.holdDone.CompareAndSwap(false, true) {
		return 0
	}
	return time.Duration(d)
}
