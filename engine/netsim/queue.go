package netsim

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/netsim/clock"
	"github.com/kalab-dev/kalab/engine/netsim/kernel"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

// kind is what a queued chunk carries (stage.Kind).
type kind = stage.Kind

const (
	evData = stage.Data // bytes to write
	evFin  = stage.Fin  // the source half-closed: CloseWrite the destination
	evRst  = stage.Rst  // the source reset: reset the destination
)

// chunk is one unit of the delay queue, released at due.
type chunk struct {
	kind kind
	data []byte  // the bytes, for evData
	pool *[]byte // the pooled buffer data lives in, or nil if it was copied out
	n    int
	due  time.Time
	// lagged is set once the chunk's lateness was recorded: the clock's
	// goroutine began releasing it and left the rest to a writer.
	lagged bool
}

// release returns the chunk's pooled buffer, if it holds one, to the pool it came from.
func (c *chunk) release() {
	if c.pool != nil {
		putBuf(c.pool)
		c.pool = nil
	}
}

// direction is one way of a link: a reader stamps chunks from src into a
// queue and a writer, started only while the queue is non-empty, releases
// each one to dst at its due time. This is toxiproxy's latency pattern: the
// delay counts from each chunk's arrival, so a queue flows as a pipeline.
type direction struct {
	l        *link
	src, dst *net.TCPConn
	other    *direction
	bytes    *atomic.Int64
	resets   *atomic.Int64
	space    chan struct{} // signalled when queued bytes drop
	srcEOF   atomic.Bool   // the reader saw FIN on src
	oob      [64]byte      // control messages (arrival timestamps) for the reader
	finAt    time.Time     // the reader found the FIN queued behind data that arrived then
	path     stage.Path    // the timing stages; the reader's own but for Due
	pieces   []stage.Piece // the reader's scratch for path.Data
	// lastChunk is when the reader last queued a chunk (or armed its idle
	// deadline): idleWait measures the idle wait from it.
	lastChunk time.Time
	stampsOn  bool // the reader turned kernel stamps and TCP_INQ on for src

	// The writer's own, kept across its goroutines so a direction that
	// starts a writer per chunk allocates nothing for its waits.
	wt *time.Timer  // timers-only waits
	ww clock.Waiter // precise waits on the shared clock
	// cw has the shared clock's goroutine release due chunks itself (fire);
	// wr is its non-blocking write to dst.
	cw clock.Waiter
	wr kernel.RawWriter

	mu      sync.Mutex
	q       []chunk // q[head:] is queued; the slots before head are spent
	head    int
	seq     stage.Sequence // keeps chunks in order under jitter, drops a second reset
	queued  int
	writing bool        // a writeLoop goroutine releases the queue
	clocked bool        // cw is scheduled on the shared clock, which releases the queue
	broken  atomic.Bool // dst failed; later data is dropped

	park     kernel.Slot // src's place in the idle parker (kernel.Parker)
	watching atomic.Bool // a watchReset goroutine is running
}

// push queues c, stamped at arrival, for release one delayed trip later. Data goes
// through the sending model first (stage.Path): it may leave the sender later, in
// several pieces, when the congestion window or the bandwidth holds it back.
func (d *direction) push(c chunk, stamp time.Time) {
	if c.kind == evData && d.path.Shaped() {
		d.pushData(c, stamp)
		return
	}
	d.pushAt(c, d.path.Due(stamp))
}

// pushClose queues a FIN or a reset: delayed like data (push).
func (d *direction) pushClose(c chunk, stamp time.Time) {
	if fault.On(fault.CloseUndelayed) {
		d.pushAt(c, stamp)
		return
	}
	d.push(c, stamp)
}

// pushData queues a data chunk by the sending model. Only the reader calls it.
func (d *direction) pushData(c chunk, stamp time.Time) {
	d.pieces = d.path.Data(stamp, c.n, d.pieces[:0])
	off := 0
	for i, pc := range d.pieces {
		part := chunk{kind: evData, n: pc.N}
		if i == len(d.pieces)-1 {
			part.data, part.pool = c.data[off:], c.pool
		} else {
			part.data = append([]byte(nil), c.data[off:off+pc.N]...)
		}
		off += pc.N
		d.pushAt(part, pc.At) // the piece's due time
	}
}

// pushAt queues c for release at due, or later if an earlier chunk is due
// later, so chunks never overtake each other (stage.Sequence).
func (d *direction) pushAt(c chunk, due time.Time) {
	d.mu.Lock()
	due, ok := d.seq.Place(c.kind, due)
	if !ok {
		d.mu.Unlock()
		return
	}
	c.due = due
	if d == d.l.up && c.kind == evData {
		d.l.ClientData(c.data, due)
	}
	if d.head == len(d.q) {
		// Empty: reuse the backing array from its start rather than let the
		// queue creep along it and reallocate.
		clear(d.q)
		d.q, d.head = d.q[:0], 0
	}
	d.q = append(d.q, c)
	d.queued += c.n
	start := !d.writing && !d.clocked
	now := false
	if start {
		// The caller is a goroutine the WaitGroup already counts, so this
		// Add cannot race a Wait that has seen zero. A release by fire
		// counts as a goroutine until fire or unschedule ends it.
		d.l.p.wg.Add(1)
		switch spin := d.l.p.cfg.SpinWindow; {
		case spin <= 0:
			d.writing = true
		case time.Now().Before(due):
			// Nothing runs until the chunk is due: the clock's goroutine
			// releases it (fire), so no writer is started and woken per chunk.
			d.clocked = true
			start = false
			clock.Precise().Schedule(&d.cw, clock.FireAt(due, d.l.p.quantum), spin)
		default:
			// Already due (the reader came to it late): released on the
			// calling goroutine, as the clock's would.
			d.clocked = true
			start, now = false, true
		}
	}
	d.mu.Unlock()
	switch {
	case start:
		d.l.p.writers.Add(1)
		go d.writeLoop()
	case now:
		d.fire()
	}
}

// fire releases the chunks that are due, on the shared clock's goroutine
// (or the pushing one, for a chunk already due when it was queued), while
// the destination takes each one whole at once. The common case, a
// socket with room in its send buffer, then costs one write and no
// goroutine. Anything else (a FIN or reset to deliver, a full or failing
// socket, a platform without the raw write) goes to a writeLoop goroutine,
// which may block; a chunk not yet due schedules fire again.
func (d *direction) fire() {
	p := d.l.p
	for {
		d.mu.Lock()
		if d.head == len(d.q) || d.l.isDone() {
			// Empty, or torn down: drop sees to what is left.
			d.dropLocked()
			d.mu.Unlock()
			p.wg.Done()
			return
		}
		c := d.q[d.head]
		if time.Now().Before(c.due) {
			clock.Precise().Schedule(&d.cw, clock.FireAt(c.due, p.quantum), p.cfg.SpinWindow)
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()

		// Recorded before the write, as writeLoop does, and once.
		p.cfg.Lag.Since(c.due)
		if !d.writeNow(&c) {
			d.mu.Lock()
			c.lagged = true
			d.q[d.head] = c
			d.clocked, d.writing = false, true
			d.mu.Unlock()
			p.writers.Add(1)
			go d.writeLoop() // takes over this release's count in p.wg
			return
		}
		d.pop(c.n)
	}
}

// writeNow releases a due chunk without blocking: true when it is done with
// (written whole, or dropped because dst failed before). Otherwise c keeps
// what is left to write, and a writer must deliver it.
func (d *direction) writeNow(c *chunk) bool {
	if c.kind != evData {
		return false
	}
	if d.broken.Load() {
		c.release()
		return true
	}
	if d == d.l.up {
		d.l.WroteUpstream(time.Now())
	}
	n, ok := d.wr.Write(d.dst, c.data)
	if n < len(c.data) || !ok {
		c.data = c.data[n:]
		return false
	}
	c.release()
	d.wrote(c.n)
	return true
}

// unschedule takes a release scheduled on the clock back, once the link is
// torn down, so Close need not wait for the chunk's due time.
func (d *direction) unschedule() {
	d.mu.Lock()
	if d.clocked && clock.Precise().Cancel(&d.cw) {
		d.dropLocked()
		d.mu.Unlock()
		d.l.p.wg.Done()
		return
	}
	// Not scheduled, or fire is running or about to: it sees the link done.
	d.mu.Unlock()
}

// pop removes the released head of the queue and wakes a reader waiting for room.
func (d *direction) pop(n int) {
	d.mu.Lock()
	d.q[d.head] = chunk{}
	d.head++
	d.queued -= n
	d.mu.Unlock()
	select {
	case d.space <- struct{}{}:
	default:
	}
}

// writeLoop releases queued chunks at their due times and exits when the
// queue is empty, so an idle direction costs no goroutine.
func (d *direction) writeLoop() {
	defer d.l.p.wg.Done()
	for {
		d.mu.Lock()
		if d.head == len(d.q) {
			d.writing = false
			d.mu.Unlock()
			return
		}
		c := d.q[d.head]
		d.mu.Unlock()

		if !d.l.p.waitUntil(c.due, d.l.done, &d.wt, &d.ww) {
			if d.wt != nil {
				d.wt.Stop()
			}
			d.drop()
			return
		}
		if !c.lagged {
			d.l.p.cfg.Lag.Since(c.due)
		}
		d.deliver(c)
		d.pop(c.n)
	}
}

// drop releases everything still queued after the link was torn down.
func (d *direction) drop() {
	d.mu.Lock()
	d.dropLocked()
	d.mu.Unlock()
}

// dropLocked releases what is queued and ends the release in progress
// (writer or clock). Callers hold d.mu.
func (d *direction) dropLocked() {
	for _, c := range d.q[d.head:] {
		c.release()
	}
	if d.head == len(d.q) {
		// Empty: keep the array for the next chunks (d.q[:0] on the next push).
		clear(d.q)
		d.q, d.head = d.q[:0], 0
	} else {
		d.q, d.head = nil, 0
	}
	d.queued = 0
	d.writing, d.clocked = false, false
}

// deliver performs one chunk's effect on dst.
func (d *direction) deliver(c chunk) {
	switch c.kind {
	case evData:
		if d.broken.Load() {
			c.release()
			return
		}
		if d == d.l.up {
			// Noted before the write: the server's answer may be read (on another
			// goroutine) before this one runs again, and must not look older than it.
			d.l.WroteUpstream(time.Now())
		}
		_, err := d.dst.Write(c.data)
		c.release()
		if err != nil {
			d.writeFailed(err)
			return
		}
		d.wrote(c.n)
	case evFin:
		if d.broken.Load() {
			return
		}
		if err := d.dst.CloseWrite(); err != nil {
			d.writeFailed(err)
			return
		}
		d.l.dirFinished()
	case evRst:
		// SO_LINGER 0 makes Close send RST instead of FIN.
		_ = d.dst.SetLinger(0)
		d.resets.Add(1)
		d.l.shutdown()
	}
}

// wrote counts a chunk of n bytes delivered whole.
func (d *direction) wrote(n int) {
	d.bytes.Add(int64(n))
	d.l.Delivered(d == d.l.up, n)
	if d.other.srcEOF.Load() {
		d.watchReset()
	}
}

// writeFailed handles a failed write to dst. A reset there travels back to
// the other side as a reset; anything else means the link is unusable.
func (d *direction) writeFailed(err error) {
	d.broken.Store(true)
	if isReset(err) {
		d.l.CloseSeen(d.other.srcSide(), true, time.Now())
		d.other.push(chunk{kind: evRst}, time.Now())
		return
	}
	d.l.shutdown()
}

// resetWatch is how long watchReset waits for a closed peer's RST. It
// checks at doubling intervals, so a long window costs a few wake-ups.
const resetWatch = time.Second

// watchReset waits briefly for the RST that a peer which already sent FIN
// answers new data with. Nothing else would surface it: the reader stopped
// at EOF, and often nothing more is written. On loopback the RST lands
// within microseconds, later only when the machine is badly loaded.
func (d *direction) watchReset() {
	if !d.watching.CompareAndSwap(false, true) {
		return
	}
	d.l.p.wg.Add(1) // the calling writer is counted, so this cannot race Wait
	go func() {
		defer d.l.p.wg.Done()
		defer d.watching.Store(false)
		deadline := time.Now().Add(resetWatch)
		for wait := 500 * time.Microsecond; !d.broken.Load(); wait *= 2 {
			if kernel.SockErrIsReset(d.dst) {
				d.writeFailed(syscall.ECONNRESET)
				return
			}
			if time.Now().After(deadline) {
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-d.l.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// isReset reports whether err means the peer reset the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// waitUntil waits until due, or returns false if done closes first. A due
// that has already passed returns at once: nothing is armed. Otherwise the
// wait ends at clock.FireAt(due, p.quantum), the end of due's quantum, so every
// chunk due within one quantum is released by the same wake-up (never
// before its due time, less than one quantum after it). With a spin window
// the wait goes to the process-wide precise clock, which keeps one
// goroutine awake near deadlines however many writers are waiting; without
// one it is a plain timer, which Go on Linux fires up to about a
// millisecond late. t and w belong to the calling writer and are reused.
func (p *Proxy) waitUntil(due time.Time, done <-chan struct{}, t **time.Timer, w *clock.Waiter) bool {
	if !time.Now().Before(due) {
		return open(done)
	}
	due = clock.FireAt(due, p.quantum)
	if spin := p.cfg.SpinWindow; spin > 0 {
		return clock.Precise().Wait(w, due, spin, done)
	}
	if wait := time.Until(due); wait > 0 {
		if *t == nil {
			*t = time.NewTimer(wait)
		} else {
			(*t).Reset(wait)
		}
		select {
		case <-(*t).C:
		case <-done:
			return false
		}
	}
	return open(done)
}

// open reports whether done is still open: a wait that ended on time but after the link
// closed must not write.
func open(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// srcSide is the end this direction reads from.
func (d *direction) srcSide() Side {
	if d == d.l.up {
		return SideClient
	}
	return SideServer
}
