package vnet

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/dueq"
)

// On the virtual clock many things fall due at the same instant: the requests of a burst
// start together, every connection of a burst gets its SYN-ACK one round trip later, a
// server answers them all after the same delay. Go's timers wake every goroutine due at an
// instant together, and which of them runs first (dials first, takes a pooled connection
// first, gets the next connection number) is then the Go scheduler's choice, different from
// run to run and at every GOMAXPROCS. An ordered network takes that choice away: what it
// schedules runs on one goroutine, one step at a time in (due time, scheduling order), and
// before each step every other goroutine of the bubble has done all it can (settle, which
// is testing/synctest.Wait), so a step's effects (a dial, a pooled connection taken, a
// response read) are complete before the next step starts.

// Order makes n run what At schedules in a fixed order: by due time, then in the order At
// was called, each only once every other goroutine of the bubble is durably blocked, as
// settle (testing/synctest.Wait) waits for. settle must be the only call of synctest.Wait
// in the bubble. Call Order once, inside the bubble, before the network is used; Close
// stops the goroutine it starts. Without Order, At runs each function on a Go timer.
func (n *Network) Order(settle func()) {
	o := &orderer{settle: settle, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	n.order.Store(o)
	go o.run()
}

// Ordered reports whether Order was called.
func (n *Network) Ordered() bool { return n.order.Load() != nil }

// At runs f at due (at once when due has passed): on an ordered network as one step of
// its order, else on a Go timer. f runs on the network's goroutine and must not block; it
// should wake or start what does the work (close a channel, start a goroutine). Stop on
// the result keeps f from running.
func (n *Network) At(due time.Time, f func()) *Step {
	s := &Step{f: f, ordered: true}
	if o := n.order.Load(); o != nil && o.push(due, s) {
		return s
	}
	s.ordered = false // nobody has seen s yet
	s.t = time.AfterFunc(time.Until(due), f)
	return s
}

// Sleep waits until at, on the network's order (At); it returns false as soon as done
// closes, or the network closes, before at. Its signature is load.Spec.Sleep's.
func (n *Network) Sleep(at time.Time, done <-chan struct{}) bool {
	if !time.Now().Before(at) {
		return true
	}
	ch := make(chan struct{})
	s := n.At(at, func() { close(ch) })
	var closed <-chan struct{}
	if o := n.order.Load(); o != nil {
		closed = o.stop
	}
	select {
	case <-ch:
		return true
	case <-done:
	case <-closed:
	}
	s.Stop()
	return false
}

// Step is a function scheduled by At.
type Step struct {
	f       func()
	ordered bool        // a step of the network's order; else a Go timer runs f
	t       *time.Timer // without order
	stopped atomic.Bool
}

// Stop keeps the step from running; it reports whether it had not run yet.
func (s *Step) Stop() bool {
	if !s.ordered {
		return s.t.Stop()
	}
	return s.stopped.CompareAndSwap(false, true)
}

// run runs the step of the order unless it was stopped.
func (s *Step) run() {
	if s.stopped.CompareAndSwap(false, true) {
		s.f()
	}
}

// orderer is the goroutine of an ordered network: a min-heap of steps keyed by (due time,
// scheduling order).
type orderer struct {
	settle func()
	mu     sync.Mutex
	q      dueq.Queue[*Step]
	closed bool
	wake   chan struct{} // capacity 1: an earlier step was pushed
	stop   chan struct{} // closed by close
	done   chan struct{} // closed when run returns
}

// push adds s at due; false once the orderer is closed.
func (o *orderer) push(due time.Time, s *Step) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return false
	}
	first := o.q.Push(due, s)
	o.mu.Unlock()
	if first {
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// next returns the earliest step if it is due, else how long until it is (negative: none).
func (o *orderer) next() (*Step, bool, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.q.Next()
}

// run performs the steps as they fall due until close. Before each step it settles: every
// other goroutine of the bubble has done what it could, whether it was woken by the
// previous step or by a timer of its own due at this instant.
func (o *orderer) run() {
	defer close(o.done)
	var t *time.Timer
	for {
		select {
		case <-o.stop:
			return
		default:
		}
		step, ok, wait := o.next()
		if ok {
			if step.stopped.Load() {
				continue
			}
			o.settle()
			step.run()
			continue
		}
		if !dueq.Await(&t, wait, o.wake, o.stop) {
			return
		}
	}
}

// close stops run and waits for it; the steps left never run.
func (o *orderer) close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	o.mu.Unlock()
	close(o.stop)
	<-o.done
}

// timer is what a connection's deadline and keepalive need of a timer: *time.Timer, or a
// step timer on an ordered network.
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// afterFunc is time.AfterFunc on the network's order (At) when it has one: a read deadline
// or a keepalive probe due at the same instant as another event takes its place in the
// network's order.
func (n *Network) afterFunc(d time.Duration, f func()) timer {
	if !n.Ordered() {
		return time.AfterFunc(d, f)
	}
	t := &stepTimer{n: n, f: f}
	t.Reset(d)
	return t
}

// stepTimer is a timer made of steps of an ordered network: Reset stops the pending step
// and schedules another.
type stepTimer struct {
	n  *Network
	f  func()
	mu sync.Mutex
	s  *Step
}

func (t *stepTimer) Stop() bool {
	t.mu.Lock()
	s := t.s
	t.s = nil
	t.mu.Unlock()
	return s != nil && s.Stop()
}

func (t *stepTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.s != nil && t.s.Stop()
	t.s = t.n.At(time.Now().Add(d), t.f)
	return was
}

// Quiet returns once every goroutine of the bubble has done all it can at this instant. On
// an ordered network it waits for a step of the order, which settles before each step (and
// must stay the bubble's only caller of settle); without order it calls settle itself.
func (n *Network) Quiet(settle func()) {
	if !n.Ordered() {
		settle()
		return
	}
	done := make(chan struct{})
	n.At(time.Now(), func() { close(done) })
	select {
	case <-done:
	case <-n.order.Load().stop: // the network closed first
	}
}
