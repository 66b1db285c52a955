package clock

import (
	"container/heap"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

const (
	// spinTail is how long before a deadline the clock stops blocking on
	// its kernel timer and yields instead. The timer itself is exact, but
	// on a VM a goroutine parked on the netpoller takes 100 to 250 µs to
	// run again once its vCPU went idle (measured here: p50 150 µs, p90
	// 250 µs with no spin at all); yielding for the last 250 µs hides that
	// for most wake-ups at a fraction of the CPU the old per-writer 1.5 ms
	// spin cost.
	spinTail = 250 * time.Microsecond

	// The clock spins before a deadline only while deadlines are sparse:
	// fewer than busyFires released in the current and the previous
	// millisecond (busyWindow), and within an allowance of 1/spinShare of
	// wall time, saved up to spinBurst. Sparse deadlines (a few requests at
	// a time, milliseconds apart) spin before every one. Dense ones (many
	// links at a small RTT) would keep the clock yielding without pause,
	// taking a core from the endpoints whose work the link is waiting for:
	// measured at 1 ms RTT with 8 requests in flight (BenchmarkSmallRTT, the
	// machine loaded), spinning before every deadline cost 173-192 µs of CPU
	// per request and a median 1.14-1.29x the model plus the endpoints' own
	// time; blocking on the kernel timer to the deadline itself cost
	// 153-161 µs and 1.05-1.16x, although each release was then 37-47 µs
	// late at the median instead of 15-30. So with deadlines dense, or the
	// allowance spent, the clock blocks on its kernel timer until the
	// deadline itself, which the netpoller reports as soon as it expires.
	busyFires  = 4
	busyWindow = time.Millisecond
	spinShare  = 4
	spinBurst  = time.Millisecond
)

// precise is the one clock every spinning writer in the process waits
// on, however many proxies are running: kalab runs several scenarios at
// once, and a spinner per waiting writer made CPU grow with the number of
// links waiting, which saturated the cores and cost the timing it was for.
// It is made on first use, so a program that never spins opens no timerfd.
var precise = sync.OnceValue(newClock)

// Precise returns the process-wide clock, made on first use.
func Precise() *Clock { return precise() }

// DefaultSpinWindow is the spin window a link uses unless its Config says
// otherwise: how long before a deadline its wait stops trusting Go timers.
const DefaultSpinWindow = 1500 * time.Microsecond

// Clock wakes waiters at their deadlines with sub-millisecond precision
// from a single goroutine, in deadline order. Go timers alone will not do:
// on Linux they fire up to about a millisecond late, because the runtime's
// netpoller waits in whole milliseconds. So the goroutine blocks on a
// timerfd, a kernel high-resolution timer that the netpoller reports as
// soon as it expires, set spinTail before the earliest deadline, and
// yields in a loop for that last stretch. Blocking on the netpoller holds
// neither a P nor a thread, unlike a sleeping syscall. Where no timerfd can
// be had the goroutine sleeps on a Go timer until the waiter's spin window
// opens and yields from there, which costs a core while it lasts but is
// still one spinner for the whole process.
//
// The goroutine starts when the first waiter registers and exits as soon
// as none is left, so an idle process holds none and nothing outlives the
// proxies that used it.
type Clock struct {
	tfd  *os.File // the kernel timer, nil if unavailable
	tfdn uintptr  // its descriptor; File.Fd would make it blocking
	// tfdRC parks run on the timer without reading it (waitTimer): expired
	// tells from expiry, the instant the timer is set for, whether it has passed.
	tfdRC syscall.RawConn
	// expiry is when the kernel timer is set to expire (sinceEpoch), MaxInt64 when
	// disarmed: written under mu by setTimer, read without it by expired.
	expiry  atomic.Int64
	expired func(fd uintptr) bool
	kick    chan struct{} // buffered: a registration became the earliest of its heap

	mu      sync.Mutex
	pending waitHeap // waiters not yet inside their spin, by start
	armed   waitHeap // waiters inside their spin, by due
	running bool     // the run goroutine exists
	blocked bool     // run is blocked on the kernel timer for armed's head (no allowance left)

	// The spin allowance and the fire counts of the current and previous
	// busyWindow (spinShare, busyFires); only run touches them.
	allowance         time.Duration
	refilled          time.Time
	winStart          time.Time
	winFires, prevWin int

	calls []*Waiter // scheduled waiters due in this pass (run's own; reused)
}

func newClock() *Clock {
	var (
		tfd  *os.File
		tfdn uintptr
	)
	tfd, tfdn = kernel.NewTimerFD() // none with kernel.Portable
	c := &Clock{
		tfd:     tfd,
		tfdn:    tfdn,
		kick:    make(chan struct{}, 1),
		pending: waitHeap{byStart: true},
	}
	c.expiry.Store(math.MaxInt64)
	if tfd != nil {
		if rc, err := tfd.SyscallConn(); err == nil {
			c.tfdRC = rc
			c.expired = func(uintptr) bool { return sinceEpoch(time.Now()) >= c.expiry.Load() }
		}
	}
	return c
}

// sinceEpoch is at in nanoseconds after epoch, the clock's measure of instants.
func sinceEpoch(at time.Time) int64 { return int64(at.Sub(epoch)) }

// waitTimer parks run until the kernel timer expires (or returns at once if it
// has). It reads nothing from the timer: the netpoller watches it edge-triggered,
// and every expiry wakes it whether or not earlier ones were read, so the time
// itself says whether the wait is over. A wake-up from an expiry before the
// timer was set again only runs expired once more. That saves the two reads
// per wake-up (one finding nothing, one after it) a read of the count costs.
func (c *Clock) waitTimer(tick []byte) error {
	if c.tfdRC != nil {
		return c.tfdRC.Read(c.expired)
	}
	_, err := c.tfd.Read(tick)
	return err
}

// Waiter is one registration: a goroutine blocked in Wait, or a callback
// Fn that the clock's goroutine calls itself (Schedule). Its owner reuses
// it for every chunk, so waiting allocates nothing after the first chunk.
// Its zero value is ready for Wait.
type Waiter struct {
	// Fn is what Schedule has the clock's goroutine call; Wait ignores it.
	Fn func()

	due, start time.Time
	ch         chan struct{} // receives one token when due has passed
	in         *waitHeap     // the heap holding the waiter, nil when not registered
	idx        int
}

// Waited reports whether w ever blocked in Wait: its channel is made then,
// so a wait whose due time had passed leaves none.
func (w *Waiter) Waited() bool { return w.ch != nil }

// Wait blocks until due, or returns false if done closes first (also when
// both happened). spin is the window before due within which Go timers are
// not trusted; it must be positive.
func (c *Clock) Wait(w *Waiter, due time.Time, spin time.Duration, done <-chan struct{}) bool {
	if time.Now().Before(due) {
		if w.ch == nil {
			w.ch = make(chan struct{}, 1)
		}
		c.register(w, due, spin)
		select {
		case <-w.ch:
		case <-done:
			c.remove(w)
			return false
		}
	}
	return open(done)
}

// Schedule has the clock's goroutine call w.Fn once due has passed, as
// precisely as Wait would wake a waiting goroutine, with no goroutine
// parked meanwhile. fn runs on the clock's goroutine, one call at a time and
// after the clock's lock is released: it may schedule w again, and must not
// block, since every other deadline of the process waits while it runs.
// Cancel takes the registration back.
func (c *Clock) Schedule(w *Waiter, due time.Time, spin time.Duration) {
	c.register(w, due, spin)
}

// register sets w's deadline and the start of its spin, and adds it.
func (c *Clock) register(w *Waiter, due time.Time, spin time.Duration) {
	lead := spin
	if c.tfd != nil {
		lead = min(spin, spinTail)
	}
	w.due, w.start = due, due.Add(-lead)
	c.add(w)
}

// Cancel unregisters a scheduled w. It reports false when w was not
// registered any more: its fn has run, or is about to run.
func (c *Clock) Cancel(w *Waiter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.in == nil {
		return false
	}
	c.unregister(w)
	return true
}

// add registers w and makes sure the run goroutine will see it in time.
func (c *Clock) add(w *Waiter) {
	c.mu.Lock()
	// Every waiter enters pending; run moves it to armed once its start
	// has passed, at once if it already has. A waiter that heads pending is
	// the next thing run must act on, so only then is run told.
	heap.Push(&c.pending, w)
	if !c.running {
		c.running = true
		c.mu.Unlock()
		go c.run()
		return
	}
	if w.idx == 0 {
		// Re-armed only to wake earlier than it already will: every pass of
		// run re-arms the timer before it blocks on it, so an earlier wake-up
		// finds w anyway. At a small RTT with many links this saves a
		// timerfd_settime per chunk.
		if at := c.nextWake(); sinceEpoch(at) < c.expiry.Load() { // disarmed: MaxInt64
			c.setTimer(at)
		}
		c.mu.Unlock()
		// run may be yielding toward a later deadline, or, without a
		// kernel timer, sleeping toward a later start.
		select {
		case c.kick <- struct{}{}:
		default:
		}
		return
	}
	c.mu.Unlock()
}

// remove unregisters w after its writer gave up waiting. If the clock had
// already fired it, the token is drained so the channel can be reused.
func (c *Clock) remove(w *Waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.in == nil {
		select {
		case <-w.ch:
		default:
		}
		return
	}
	c.unregister(w)
}

// unregister takes w out of its heap. Callers hold c.mu.
func (c *Clock) unregister(w *Waiter) {
	heap.Remove(w.in, w.idx)
	if c.pending.Len() == 0 && c.armed.Len() == 0 {
		// Wake run now so it exits instead of waiting for a deadline
		// nobody is waiting for any more.
		c.setTimer(time.Now())
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// run is the clock's goroutine. Each pass moves waiters whose start has
// passed into armed, fires those whose deadline passed, then waits for the
// next instant that matters; it returns when no waiter is left. Every wait
// in it is bounded by a deadline, a kick or an expiry of the kernel timer.
func (c *Clock) run() {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	var tick [8]byte
	for {
		c.mu.Lock()
		now := time.Now()
		fired := c.collectDue(now)
		switch {
		case fired:
			calls := c.calls
			c.mu.Unlock()
			// Scheduled callbacks run here, in deadline order, without the
			// lock: they may schedule their waiter again.
			for i, w := range calls {
				calls[i] = nil
				w.Fn()
			}
			c.calls = calls[:0] // only run touches calls
			// Let the writers just woken run on this P first.
			runtime.Gosched()
		case c.armed.Len() > 0 && c.tfd != nil && !c.mayspin(now):
			// No allowance left: block on the kernel timer until the
			// earliest deadline (or an earlier start add asks for).
			c.blocked = true
			c.setTimer(c.nextWake())
			c.mu.Unlock()
			err := c.waitTimer(tick[:])
			c.mu.Lock()
			c.blocked = false
			c.mu.Unlock()
			if err != nil {
				c.spin(time.Now().Add(spinTail)) // as below: never a busy loop without a wait
			}
		case c.armed.Len() > 0:
			due := c.armed.s[0].due
			c.mu.Unlock()
			t0 := time.Now()
			c.spin(due)
			c.mu.Lock()
			c.allowance -= time.Since(t0)
			c.mu.Unlock()
		case c.pending.Len() > 0:
			start := c.pending.s[0].start
			c.setTimer(start)
			c.mu.Unlock()
			c.sleepUntil(start, &t, tick[:])
		default:
			c.setTimer(time.Time{})
			c.running = false
			c.mu.Unlock()
			return
		}
	}
}

// collectDue moves the waiters whose start has come to the armed heap, rolls the busy
// window, and takes the waiters now due: a channel waiter gets its token, a callback is
// queued on c.calls. It reports whether any fired. Only run calls it, holding c.mu.
func (c *Clock) collectDue(now time.Time) (fired bool) {
	for c.pending.Len() > 0 && !c.pending.s[0].start.After(now) {
		heap.Push(&c.armed, heap.Pop(&c.pending))
	}
	if gap := now.Sub(c.winStart); gap >= busyWindow {
		c.prevWin, c.winFires, c.winStart = c.winFires, 0, now
		if gap >= 2*busyWindow {
			c.prevWin = 0 // the window before this one was empty
		}
	}
	for c.armed.Len() > 0 && !c.armed.s[0].due.After(now) {
		w := heap.Pop(&c.armed).(*Waiter)
		if w.Fn != nil {
			c.calls = append(c.calls, w)
		} else {
			w.ch <- struct{}{} // never blocks: one token per registration
		}
		fired = true
		c.winFires++
	}
	return fired
}

// sleepUntil waits, without c.mu, until the earliest pending start (or a kick from add):
// on the kernel timer, which parks on the netpoller and which add moves earlier if an
// earlier waiter arrives, or on a Go timer t if there is none or it fails.
func (c *Clock) sleepUntil(start time.Time, t **time.Timer, tick []byte) {
	if c.tfd != nil {
		if err := c.waitTimer(tick); err == nil {
			return
		}
		// Not expected of a private timerfd. Sleeping on a Go timer for this pass keeps a
		// broken one from turning the loop into a spin.
	}
	d := time.Until(start)
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-(*t).C:
	case <-c.kick:
	}
}

// mayspin refills the spin allowance for the time since the last refill
// and reports whether the clock may spin toward the next deadline: some
// allowance left and deadlines sparse. Only run calls it, holding c.mu.
func (c *Clock) mayspin(now time.Time) bool {
	if !c.refilled.IsZero() {
		c.allowance = min(c.allowance+now.Sub(c.refilled)/spinShare, spinBurst)
	} else {
		c.allowance = spinBurst
	}
	c.refilled = now
	return c.allowance > 0 && max(c.winFires, c.prevWin) < busyFires
}

// nextWake is when run must next look at the heaps: the earliest start in
// pending, or, while run blocks instead of spinning, the earliest due in
// armed if that comes first. Callers hold c.mu.
func (c *Clock) nextWake() time.Time {
	var at time.Time
	if c.pending.Len() > 0 {
		at = c.pending.s[0].start
	}
	if c.blocked && c.armed.Len() > 0 {
		if due := c.armed.s[0].due; at.IsZero() || due.Before(at) {
			at = due
		}
	}
	return at
}

// spin yields until due, or returns early when a kick says a new waiter
// may need to fire first.
func (c *Clock) spin(due time.Time) {
	for time.Now().Before(due) {
		select {
		case <-c.kick:
			return
		default:
		}
		runtime.Gosched()
	}
}

// setTimer arms the kernel timer to expire at `at`, or disarms it when at
// is zero. Callers hold c.mu, so the timer always matches the heaps.
func (c *Clock) setTimer(at time.Time) {
	if c.tfd == nil {
		return
	}
	if !at.IsZero() && sinceEpoch(at) == c.expiry.Load() && time.Now().Before(at) {
		return // already set to expire then, and not expired yet
	}
	if at.IsZero() {
		c.expiry.Store(math.MaxInt64)
	} else {
		c.expiry.Store(sinceEpoch(at))
	}
	kernel.ArmTimerFD(c.tfdn, at)
}

// waitHeap is a min-heap of waiters by due, or by start when byStart.
type waitHeap struct {
	s       []*Waiter
	byStart bool
}

func (h *waitHeap) Len() int { return len(h.s) }

func (h *waitHeap) Less(i, j int) bool {
	if h.byStart {
		return h.s[i].start.Before(h.s[j].start)
	}
	return h.s[i].due.Before(h.s[j].due)
}

func (h *waitHeap) Swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].idx, h.s[j].idx = i, j
}

func (h *waitHeap) Push(x any) {
	w := x.(*Waiter)
	w.in, w.idx = h, len(h.s)
	h.s = append(h.s, w)
}

func (h *waitHeap) Pop() any {
	n := len(h.s) - 1
	w := h.s[n]
	h.s[n] = nil
	h.s = h.s[:n]
	w.in, w.idx = nil, -1
	return w
}
