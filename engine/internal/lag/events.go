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
	// holdAt and holdFor inject one late timer (HoldAt): the first Since due at or after
	// holdAt waits holdFor; holdDone marks it spent.
	holdAt, holdFor atomic.Int64
	holdDone        atomic.Bool
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

// HoldAt makes the first Since whose timer is due at or after at wait d past its due time
// before it returns and records, once: one late timer injected at a chosen instant, for
// tests that prove where lateness matters.
func (r *Recorder) HoldAt(at time.Time, d time.Duration) {
	if r != nil {
		r.ev.holdAt.Store(at.UnixNano())
		r.ev.holdFor.Store(int64(d))
		r.ev.holdDone.Store(false)
	}
}

// heldOnce is how long a Since due at due waits for HoldAt: its d the first time a due at
// or after the chosen instant comes, 0 otherwise.
func (r *Recorder) heldOnce(due time.Time) time.Duration {
	d := r.ev.holdFor.Load()
	if d <= 0 || due.UnixNano() < r.ev.holdAt.Load() || !r.ev.holdDone.CompareAndSwap(false, true) {
		return 0
	}
	return time.Duration(d)
}
