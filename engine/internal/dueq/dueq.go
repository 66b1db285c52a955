// Package dueq is a queue of things that fall due at an instant: earliest first, and among
// those due at the same instant, in the order they were pushed. It is the order a virtual
// network and a virtual link run their events in, so that Go's scheduler never chooses it.
// A Queue is not safe for concurrent use: its owner holds its own lock.
package dueq

import "time"

// Queue is a min-heap of values keyed by (due time, push order).
type Queue[T any] struct {
	q   []entry[T]
	seq uint64
}

type entry[T any] struct {
	due time.Time
	seq uint64
	v   T
}

func (a *entry[T]) before(b *entry[T]) bool {
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

// Len is how many values are queued.
func (q *Queue[T]) Len() int { return len(q.q) }

// Push queues v at due and reports whether it is now the earliest.
func (q *Queue[T]) Push(due time.Time, v T) (first bool) {
	q.seq++
	q.q = append(q.q, entry[T]{due: due, seq: q.seq, v: v})
	i := len(q.q) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !q.q[i].before(&q.q[parent]) {
			break
		}
		q.q[i], q.q[parent] = q.q[parent], q.q[i]
		i = parent
	}
	return i == 0
}

// Next removes and returns the earliest value when it is due (its time has come), else
// says how long until it is; wait is negative when the queue is empty.
func (q *Queue[T]) Next() (v T, ok bool, wait time.Duration) {
	if len(q.q) == 0 {
		return v, false, -1
	}
	if wait := time.Until(q.q[0].due); wait > 0 {
		return v, false, wait
	}
	return q.pop(), true, 0
}

func (q *Queue[T]) pop() T {
	it := q.q[0]
	last := len(q.q) - 1
	q.q[0] = q.q[last]
	q.q[last] = entry[T]{}
	q.q = q.q[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.q[l].before(&q.q[m]) {
			m = l
		}
		if r < last && q.q[r].before(&q.q[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.q[i], q.q[m] = q.q[m], q.q[i]
		i = m
	}
	return it.v
}

// Clear drops every queued value.
func (q *Queue[T]) Clear() { q.q = nil }

// Await is the wait of a queue's goroutine between two values: until the earliest is due
// (wait, as Next said; negative: none is queued, so only a wake ends it), or an earlier one
// was pushed (wake), or the goroutine is to stop (stop: false). t is the goroutine's timer,
// made on first use and reused after.
func Await(t **time.Timer, wait time.Duration, wake, stop <-chan struct{}) bool {
	if wait < 0 {
		select {
		case <-wake:
			return true
		case <-stop:
			return false
		}
	}
	if *t == nil {
		*t = time.NewTimer(wait)
	} else {
		(*t).Reset(wait)
	}
	select {
	case <-(*t).C:
	case <-wake:
		(*t).Stop()
	case <-stop:
		(*t).Stop()
		return false
	}
	return true
}
