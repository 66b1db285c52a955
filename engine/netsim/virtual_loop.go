package netsim

import (
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/vnet"
)

// vevent is one item of a VirtualProxy's event loop: at due, deliver a chunk's effect
// (data, FIN or reset) to its direction's destination, or run call.
type vevent struct {
	due  time.Time
	seq  uint64 // push order: breaks ties between items due at the same instant
	d    *vdir
	kind kind
	data []byte
	call func() // set for the proxy's own timed steps (a modelled accept, a delayed dial)
}

// before orders the loop's items: by due time, then by push order.
func (a *vevent) before(b *vevent) bool {
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

// eventLoop is the single scheduler of a VirtualProxy: a min-heap of items keyed by (due
// time, push sequence) and one goroutine (run) that sleeps on a timer until the earliest
// is due and performs the due items one by one in that order. So the order in which
// chunks, FINs and resets take effect is the network's (their due times, and for items
// due at the same instant the order they were pushed in), never the Go scheduler's. A
// push that becomes the earliest item wakes the goroutine to sleep again until it.
//
// On an ordered network (vnet.Network.Order) the loop's items go to the network's own order
// instead, one order for every link of the run, the server's timers and the load's starts:
// each is performed once everything the one before it set off has run its course.
type eventLoop struct {
	net     *vnet.Network // ordered: items are the network's steps; nil: this loop's own goroutine
	perform func(*vevent)
	mu      sync.Mutex
	q       []vevent // a binary min-heap by before
	seq     uint64
	wake    chan struct{} // capacity 1: an earlier item was pushed
	stop    chan struct{} // closed by close
	once    sync.Once
}

func newEventLoop(n *vnet.Network, perform func(*vevent)) *eventLoop {
	e := &eventLoop{perform: perform, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if n != nil && n.Ordered() {
		e.net = n
	}
	return e
}

// push adds ev, stamped with the next sequence number.
func (e *eventLoop) push(ev vevent) {
	if e.net != nil {
		e.net.At(ev.due, func() {
			select {
			case <-e.stop: // the items left are dropped with the loop
			default:
				e.perform(&ev)
			}
		})
		return
	}
	e.mu.Lock()
	e.seq++
	ev.seq = e.seq
	e.q = append(e.q, ev)
	i := len(e.q) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !e.q[i].before(&e.q[parent]) {
			break
		}
		e.q[i], e.q[parent] = e.q[parent], e.q[i]
		i = parent
	}
	first := i == 0
	e.mu.Unlock()
	if first {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// popLocked removes and returns the earliest item. The caller holds e.mu.
func (e *eventLoop) popLocked() vevent {
	ev := e.q[0]
	last := len(e.q) - 1
	e.q[0] = e.q[last]
	e.q[last] = vevent{}
	e.q = e.q[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && e.q[l].before(&e.q[m]) {
			m = l
		}
		if r < last && e.q[r].before(&e.q[m]) {
			m = r
		}
		if m == i {
			break
		}
		e.q[i], e.q[m] = e.q[m], e.q[i]
		i = m
	}
	return ev
}

// next returns the earliest item if it is due at now, else how long until it is due
// (negative: the loop is empty).
func (e *eventLoop) next() (vevent, bool, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.q) == 0 {
		return vevent{}, false, -1
	}
	if wait := time.Until(e.q[0].due); wait > 0 {
		return vevent{}, false, wait
	}
	return e.popLocked(), true, 0
}

// run performs the items as they fall due until close. perform runs on this goroutine,
// one item at a time, without e.mu held, so it may push. On an ordered network the
// network's goroutine performs them and run only waits for close.
func (e *eventLoop) run() {
	if e.net != nil {
		<-e.stop
		return
	}
	perform := e.perform
	var t *time.Timer
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		ev, ok, wait := e.next()
		if ok {
			perform(&ev)
			continue
		}
		if wait < 0 {
			select {
			case <-e.wake:
			case <-e.stop:
				return
			}
			continue
		}
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-t.C:
		case <-e.wake:
			t.Stop()
		case <-e.stop:
			t.Stop()
			return
		}
	}
}

// close ends run; the items left are dropped with the loop.
func (e *eventLoop) close() {
	e.once.Do(func() { close(e.stop) })
}
