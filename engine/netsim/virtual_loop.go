package netsim

import (
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/dueq"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// vevent is one item of a VirtualProxy's event loop: at due, deliver a chunk's effect
// (data, FIN or reset) to its direction's destination, or run call.
type vevent struct {
	due  time.Time
	d    *vdir
	kind kind
	data []byte
	arr  *arrival // a link's data item: its bytes (vdir.pushAt)
	call func()   // set for the proxy's own timed steps (a modelled accept, a delayed dial)
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
	q       dueq.Queue[vevent]
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

// push adds ev after every item due at the same instant.
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
	first := e.q.Push(ev.due, ev)
	e.mu.Unlock()
	if first {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// next returns the earliest item if it is due at now, else how long until it is due
// (negative: the loop is empty).
func (e *eventLoop) next() (vevent, bool, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.q.Next()
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
		if !dueq.Await(&t, wait, e.wake, e.stop) {
			return
		}
	}
}

// close ends run; the items left are dropped with the loop.
func (e *eventLoop) close() {
	e.once.Do(func() { close(e.stop) })
}
