package lag

import "time"

// threadSched is a thread's cumulative run-queue delay and how many times it was given a
// core (/proc/self/task/<tid>/schedstat).
type threadSched struct {
	wait   time.Duration
	slices int64
}

// RunQueue measures, over a span, how long this process's threads waited for a core on
// average each time they were given one: the growth of their run-queue delay over the
// growth of their slices. A timer's goroutine runs on such a thread, so when the threads
// sleep at a timer's due time this is what its wake-up waits for a core, which the timers
// of a run in flight have to absorb. Threads born in the span count from zero; threads gone
// at its end are not counted.
type RunQueue struct {
	at map[int]threadSched
	ok bool
}

// StartRunQueue begins a span; where the system does not say, the span reports nothing.
func StartRunQueue() RunQueue {
	at, ok := readThreads()
	return RunQueue{at: at, ok: ok}
}

// Mean returns the mean wait for a core per slice since the span began, and false when the
// system does not say or no thread was given a core.
func (q RunQueue) Mean() (time.Duration, bool) {
	if !q.ok {
		return 0, false
	}
	now, ok := readThreads()
	if !ok {
		return 0, false
	}
	return meanWait(q.at, now)
}

func meanWait(from, to map[int]threadSched) (time.Duration, bool) {
	var wait time.Duration
	var slices int64
	for tid, t := range to {
		f := from[tid]
		wait += max(t.wait-f.wait, 0)
		slices += max(t.slices-f.slices, 0)
	}
	if slices == 0 {
		return 0, false
	}
	return wait / time.Duration(slices), true
}
