package vclock

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// DefaultStall is the real-time no-progress limit Run uses when a Progress
// counter is given without StallAfter.
const DefaultStall = 20 * time.Second

// Host runs functions on a virtual clock. The zero value is not usable.
type Host struct {
	t *testing.T
}

// FromTest returns a Host whose bubbles are subtests of t (for go test).
// Runs must end before t's test function returns.
func FromTest(t *testing.T) *Host {
	if t == nil {
		panic("vclock: FromTest(nil)")
	}
	return &Host{t: t}
}

// Available reports whether this host can run bubbles: true for hosts from
// FromTest and Main, false for a nil or zero Host.
func (h *Host) Available() bool {
	return h != nil && h.t != nil
}

// Option configures one Run.
type Option func(*config)

type config struct {
	progress *atomic.Int64
	stall    time.Duration
	limit    time.Duration
	outside  time.Duration
	channels bool // OutsideChannels
}

// Progress returns an option: the watchdog reads p, a counter something in the
// bubble increments on every network event or request, to see progress.
func Progress(p *atomic.Int64) Option {
	return func(c *config) { c.progress = p }
}

// StallAfter sets the real-time no-progress limit (default DefaultStall). It
// applies only together with Progress.
func StallAfter(d time.Duration) Option {
	return func(c *config) { c.stall = d }
}

// Limit sets a total real-time limit for the run, with or without Progress.
func Limit(d time.Duration) Option {
	return func(c *config) { c.limit = d }
}

// OutsideAfter makes the watchdog look, once the bubble has made no progress for d of real
// time, for a goroutine of the bubble waiting on real I/O (a socket, a pipe, a DNS lookup:
// "IO wait", or a system call inside package net), which nothing in the bubble can end;
// it gives up at once with a StallError whose Outside is true. It applies only together
// with Progress.
func OutsideAfter(d time.Duration) Option {
	return func(c *config) { c.outside = d }
}

// OutsideChannels extends OutsideAfter to goroutines of the bubble that wait on a channel
// made outside it (a client waiting on a worker the test started before the run): such a
// wait is never durable, so it stops the clock. Unlike real I/O, a wait on an outside
// channel is often brief (a progress bar's), so it counts only when the same goroutine is
// found waiting at two looks, d apart, with no progress between them.
func OutsideChannels() Option {
	return func(c *config) { c.channels = true }
}

// OutsideText is what a StallError whose Outside is true says of the goroutine it names.
const OutsideText = "waits on a real socket, a DNS lookup or a channel made outside the run"

// StallError reports a bubble that stopped making progress in real time.
type StallError struct {
	// Name is the run's name.
	Name string
	// After is the real time without progress, or the total limit when
	// Limit is true.
	After time.Duration
	// Limit is true when the run's total real-time limit ran out.
	Limit bool
	// Outside is true when a goroutine of the bubble waits on real I/O (OutsideAfter).
	Outside bool
	// Blocked summarises the goroutines of the bubble that were not durably
	// blocked: status and top frames, one entry per goroutine.
	Blocked []string

	done <-chan struct{}
}

func (e *StallError) Error() string {
	var b strings.Builder
	switch {
	case e.Outside:
		fmt.Fprintf(&b, "the virtual clock stopped in %s: after %v without progress, a goroutine of the run %s", e.Name, e.After, OutsideText)
	case e.Limit:
		fmt.Fprintf(&b, "the virtual clock stopped in %s: real-time limit of %v reached", e.Name, e.After)
	default:
		fmt.Fprintf(&b, "the virtual clock stopped in %s: no progress for %v", e.Name, e.After)
	}
	b.WriteString("; blocked outside the model: ")
	if len(e.Blocked) == 0 {
		b.WriteString("(no goroutine of the bubble was found outside a durable block)")
	} else {
		b.WriteString(strings.Join(e.Blocked, "; "))
	}
	return b.String()
}

// Done returns a channel closed when the stalled bubble ends after all, if it
// ever does (for example after its socket was closed). A caller that can
// release what blocked the bubble may wait on it to clean up.
func (e *StallError) Done() <-chan struct{} {
	return e.done
}

// ErrNotRun is returned (wrapped) when the test harness skipped the bubble's
// subtest, for example because -test.run or -test.skip filtered it out.
var ErrNotRun = errors.New("vclock: bubble did not run")

// Run runs f inside a new synctest bubble and returns when f and every
// goroutine f started have ended, or when the watchdog gives up (see
// StallError). name labels the bubble; it becomes the subtest name after
// characters other than letters, digits, '-', '_' and '.' are replaced.
//
// Without Progress or Limit there is no watchdog: a bubble blocked outside the
// model makes Run wait forever. With a host from FromTest, every Run must
// have returned before the test function returns.
//
// A panic or runtime.Goexit in f, and synctest's deadlock panics (every goroutine of the bubble
// durably blocked with no timer pending, or f returned while goroutines it
// started are still blocked), are returned as errors. After a StallError the
// bubble's goroutines keep running or stay blocked; the process should be
// treated as tainted.
func (h *Host) Run(name string, f func(), opts ...Option) error {
	if !h.Available() {
		return errors.New("vclock: Run on a host that is not available")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.stall <= 0 {
		cfg.stall = DefaultStall
	}
	name = sanitize(name)
	if _, in := currentBubbleID(); in {
		return fmt.Errorf("vclock: Run(%s) called inside a bubble", name)
	}

	b := &bubble{name: name, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		ran := h.t.Run(name, func(st *testing.T) {
			b.started.Store(true)
			b.runIn(st, f)
		})
		if !b.started.Load() && b.err == nil {
			b.err = fmt.Errorf("%w: %s (skipped by the test harness: -test.run/-test.skip filter?)", ErrNotRun, name)
		} else if !ran && b.err == nil {
			b.err = fmt.Errorf("vclock: bubble %s failed", name)
		}
	}()
	return b.watch(&cfg)
}

// bubble is the state of one Run.
type bubble struct {
	name    string
	started atomic.Bool
	bid     atomic.Int64  // the runtime's bubble id once known; ids start at 1
	done    chan struct{} // closed when the subtest has ended
	err     error         // written before done is closed
}

// runIn runs f in a bubble on the subtest st, turning panics into b.err.
func (b *bubble) runIn(st *testing.T, f func()) {
	var fErr error
	defer func() {
		r := recover()
		if r == nil {
			b.err = fErr
			return
		}
		// synctest panics on the goroutine that started the bubble when the
		// bubble deadlocks; its goroutines are still parked and identifiable.
		var err error
		reason := fmt.Sprint(r)
		if id, ok := b.id(); ok && strings.HasPrefix(reason, "deadlock") {
			err = &DeadlockError{Name: b.name, Reason: reason, Blocked: bubbleGoroutines(id, false)}
		} else {
			err = fmt.Errorf("vclock: %s: synctest panicked: %s", b.name, reason)
		}
		if fErr != nil {
			b.err = errors.Join(fErr, err)
		} else {
			b.err = err
		}
	}()
	synctest.Test(st, func(*testing.T) { fErr = b.root(f) })
}

// root is the body of the bubble. It runs f on a goroutine of its own so that
// a panic or runtime.Goexit in f ends only that goroutine (testing turns a
// Goexit of the test goroutine that is not FailNow into a crash), and returns
// f's outcome as an error.
func (b *bubble) root(f func()) error {
	if id, ok := currentBubbleID(); ok {
		b.bid.Store(id)
	}
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		returned := false
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("vclock: panic in %s: %v\n%s", b.name, r, debug.Stack())
			} else if !returned {
				err = fmt.Errorf("vclock: %s called runtime.Goexit", b.name)
			}
		}()
		f()
		returned = true
	}()
	<-done
	return err
}

// id returns the runtime's id of the bubble, once its root has reported it.
func (b *bubble) id() (int64, bool) {
	id := b.bid.Load()
	return id, id > 0
}

// DeadlockError reports synctest's deadlock panic: every goroutine of the
// bubble durably blocked with no timer pending, or the run's function returned
// while goroutines it started were still blocked. The goroutines stay blocked.
type DeadlockError struct {
	Name    string
	Reason  string   // synctest's panic text
	Blocked []string // goroutines of the bubble, status and top frames
}

func (e *DeadlockError) Error() string {
	s := fmt.Sprintf("vclock: %s: %s", e.Name, e.Reason)
	if len(e.Blocked) > 0 {
		s += ": " + strings.Join(e.Blocked, "; ")
	}
	return s
}

// watch waits for the bubble to end or for the watchdog to give up.
func (b *bubble) watch(cfg *config) error {
	if cfg.progress == nil && cfg.limit <= 0 {
		<-b.done
		return b.err
	}
	start := time.Now()
	var limitC <-chan time.Time
	if cfg.limit > 0 {
		lt := time.NewTimer(cfg.limit)
		defer lt.Stop()
		limitC = lt.C
	}
	var tickC <-chan time.Time
	var last int64
	lastChange := start
	looks := 0                  // the bubble was searched for outside waits since its last progress
	var waiting map[string]bool // goroutines found waiting on outside channels at the last look
	if cfg.progress != nil {
		last = cfg.progress.Load()
		iv := min(max(cfg.stall/10, time.Millisecond), 100*time.Millisecond)
		tk := time.NewTicker(iv)
		defer tk.Stop()
		tickC = tk.C
	}
	for {
		select {
		case <-b.done:
			return b.err
		case <-limitC:
			return b.stalled(cfg.limit, true)
		case now := <-tickC:
			if v := cfg.progress.Load(); v != last {
				last, lastChange, looks, waiting = v, now, 0, nil
			} else if now.Sub(lastChange) >= cfg.stall {
				return b.stalled(cfg.stall, false)
			} else if cfg.outside > 0 && now.Sub(lastChange) >= cfg.outside*time.Duration(looks+1) {
				looks++
				var e error
				waiting, e = b.outside(now.Sub(lastChange), cfg.channels, waiting)
				if e != nil {
					return e
				}
			}
		}
	}
}

func (b *bubble) stalled(after time.Duration, limit bool) error {
	e := &StallError{Name: b.name, After: after, Limit: limit, done: b.done}
	if id, ok := b.id(); ok {
		// A goroutine may be caught between two durable blocks; look again
		// briefly before reporting that none is outside one.
		for i := 0; i < 5; i++ {
			e.Blocked = bubbleGoroutines(id, true)
			if len(e.Blocked) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return e
}

// outside returns a StallError naming the goroutines of the bubble that wait on real I/O,
// or, with channels, on a channel made outside the bubble at this look and the one before
// (prev); nil when none does. It returns the goroutines waiting on outside channels now.
func (b *bubble) outside(after time.Duration, channels bool, prev map[string]bool) (map[string]bool, error) {
	id, ok := b.id()
	if !ok {
		return nil, nil
	}
	var io, held []string
	now := map[string]bool{}
	for _, g := range bubbleGoroutines(id, true) {
		switch {
		case realIO(g):
			io = append(io, g)
		case channels && outsideChan(g):
			now[g] = true
			if prev[g] {
				held = append(held, g)
			}
		}
	}
	if len(io) == 0 {
		io = held
	}
	if len(io) == 0 {
		return now, nil
	}
	return now, &StallError{Name: b.name, After: after.Round(time.Millisecond), Outside: true, Blocked: io, done: b.done}
}

// outsideChan reports whether a goroutine summary of one not durably blocked shows a
// channel wait: inside a bubble, only a channel made outside it waits so.
func outsideChan(summary string) bool {
	head, _, _ := strings.Cut(summary, "]:")
	return strings.Contains(head, "[chan receive") || strings.Contains(head, "[chan send") || strings.Contains(head, "[select")
}

// realIO reports whether a goroutine summary shows a wait only the operating system can
// end, in package net: the network poller ("IO wait": a socket, a DNS query) or a system
// call (a resolver through cgo). A write to a full pipe (a log on stderr) is not counted.
func realIO(summary string) bool {
	head, frames, _ := strings.Cut(summary, "]:")
	return (strings.Contains(head, "[IO wait") || strings.Contains(head, "[syscall")) && strings.Contains(frames, " net.")
}

// sanitize turns name into a subtest name: letters, digits, '-', '_' and '.'
// are kept, other runes become '_'.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	if b.Len() == 0 {
		return "bubble"
	}
	return b.String()
}

// Settle returns once every other goroutine of the calling goroutine's bubble is durably
// blocked (testing/synctest.Wait): what they were woken to do is done, and the clock has
// not moved. Only one goroutine of a bubble may be in Settle at a time; it panics outside a
// bubble.
func Settle() { synctest.Wait() }
