package netsim

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/netsim/conntrack"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

const (
	// bufSize is the read size per chunk. Buffers come from a pool and are
	// taken only once a socket is readable, so an idle link holds none.
	bufSize = 16 << 10
	// smallChunk is the size up to which a chunk is copied out of its
	// pooled buffer.
	smallChunk = 2 << 10
	// maxQueued bounds the bytes in flight per direction, like a TCP window:
	// a fast sender waits instead of the proxy buffering without limit.
	maxQueued = 4 << 20
	// dialTimeout bounds the upstream connect; on loopback it either succeeds
	// or is refused at once, so this only guards a wedged listener.
	dialTimeout = 10 * time.Second
)

var (
	bufPool = sync.Pool{New: func() any {
		b := make([]byte, bufSize)
		return &b
	}}
	// smallPool holds the smallChunk-sized buffers small chunks are copied
	// into, so a chunk in flight pins 2 KiB rather than 16 and the copy
	// allocates nothing once the pool is warm.
	smallPool = sync.Pool{New: func() any {
		b := make([]byte, smallChunk)
		return &b
	}}
)

// putBuf returns a buffer to the pool its size says it came from.
func putBuf(b *[]byte) {
	if cap(*b) == smallChunk {
		smallPool.Put(b)
		return
	}
	bufPool.Put(b)
}

// link is one client connection and its upstream connection.
type link struct {
	p      *Proxy
	client *net.TCPConn
	done   chan struct{}

	mu       sync.Mutex
	upstream *net.TCPConn
	closed   bool
	finished int // directions whose FIN was delivered

	up, down *direction
	once     sync.Once

	acceptAt          time.Time // when the modelled server accepts it (backlog.go)
	overflow          bool      // the modelled queue was full: refuse it
	conntrack.Tracker           // the ConnRecord's bookkeeping; Opened is when the client connected
}

func newLink(p *Proxy, c *net.TCPConn, t0 time.Time, id uint64) *link {
	l := &link{p: p, client: c, done: make(chan struct{})}
	l.Begin(t0, id)
	up, down := p.cfg.paths(t0, p.paceUp, p.paceDown, p.delays)
	l.up = &direction{l: l, src: c, path: up,
		bytes: &p.bytesUp, resets: &p.resetsUp, space: make(chan struct{}, 1)}
	l.down = &direction{l: l, dst: c, path: down,
		bytes: &p.bytesDown, resets: &p.resetsDown, space: make(chan struct{}, 1)}
	l.up.other, l.down.other = l.down, l.up
	l.up.cw.Fn, l.down.cw.Fn = l.up.fire, l.down.fire
	return l
}

// run dials the upstream, then starts one reader per direction. Writers
// are started on demand by the queues.
func (l *link) run() {
	defer l.p.wg.Done()
	if l.overflow {
		l.p.overflows.Add(1)
		l.refused()
		return
	}
	if wait := time.Until(l.acceptAt); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.done:
			t.Stop()
			return
		}
	}
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(l.p.ctx, "tcp", l.p.cfg.Upstream)
	if err != nil {
		if a, ok := l.client.RemoteAddr().(*net.TCPAddr); ok {
			l.p.upstreamRefused(a.Port, time.Now())
		}
		l.refused()
		return
	}
	l.Connected(time.Now())
	u := conn.(*net.TCPConn)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = u.Close()
		return
	}
	l.upstream = u
	l.mu.Unlock()
	l.up.dst = u
	l.down.src = u
	// Both readers start on fresh goroutines rather than this one, whose
	// stack grew while dialing: an idle link then holds two small stacks.
	l.p.wg.Add(2)
	go l.up.readLoop()
	go l.down.readLoop()
}

// refused answers the client with a reset one round trip after it connected, as a
// refused SYN is.
func (l *link) refused() {
	l.RefusedAt(time.Now())
	l.down.pushAt(chunk{kind: evRst}, stage.Refused(l.Opened(), l.p.cfg.RTT))
}

// dirFinished records a delivered FIN; when both directions are finished
// the link is torn down.
func (l *link) dirFinished() {
	l.mu.Lock()
	l.finished++
	both := l.finished >= 2
	l.mu.Unlock()
	if both {
		l.shutdown()
	}
}

// shutdown closes both sockets and wakes every goroutine of the link.
func (l *link) shutdown() {
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		u := l.upstream
		l.mu.Unlock()
		close(l.done)
		_ = l.client.Close()
		if u != nil {
			_ = u.Close()
		}
		l.up.unschedule()
		l.down.unschedule()
		l.p.parker.Forget(&l.up.park)
		l.p.parker.Forget(&l.down.park)
		l.p.removeLink(l)
		if f := l.p.cfg.OnConn; f != nil {
			f(l.Record(time.Now()))
		}
	})
}

func (l *link) isDone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// idleHandoff is how long a reader waits for its next chunk before it hands
// the wait to a fresh goroutine (readLoop).
const idleHandoff = 100 * time.Millisecond

// chunkReader is what openReader makes for readLoop: it reads the source
// socket and hands each chunk of data to take while take returns true,
// which keeps reading (and waiting) within one call, and returns at the
// first thing that is not data. That is end of file (err nil), a read error
// (the read deadline's too), or stopped, when take returned false. stamp is
// when the end of file or error arrived.
type chunkReader func(take func(buf *[]byte, n int, stamp time.Time) bool) (stamp time.Time, stopped bool, err error)

// readLoop reads src until EOF, reset or teardown, stamping each chunk.
//
// An idle link was its two readers parked in their reads, so their stacks
// were most of what it cost (8.1 KiB of stacks each for 5,000
// idle links). A parked reader uses 576 bytes of stack, yet each had 4 KiB:
// goroutines start at the runtime's running average of stack use (large
// while links are dialing), and releasing a chunk (push, the sending
// model, the clock, a write) goes deep enough to double a 2 KiB one; gdb
// over runtime.allgs and morestack showed both. A stack never shrinks back
// while its goroutine parks. So once a reader has waited idleHandoff for its
// next chunk it leaves the wait to the proxy's idle parker (kernel.Parker),
// which holds it with no goroutine at all, or elsewhere to a fresh goroutine
// with a fresh stack. Either costs one goroutine start per idle period. The
// read deadline that says so is not moved per chunk, which cost 7% of a
// proxied request's CPU in the timer heap's lock (in a profile): it
// stays where it was, and when it passes the reader looks at when the last
// chunk came and waits on to idleHandoff after that one (idleWait).
func (d *direction) readLoop() {
	defer d.l.p.wg.Done()
	read, err := d.openReader()
	if err != nil {
		d.push(chunk{kind: evRst}, time.Now())
		return
	}
	// A link that never carries a chunk parks too.
	armed := d.armIdle()
	take := d.take // bound once: a method value passed on allocates
	for {
		if !d.waitSpace() {
			return
		}
		stamp, stopped, err := read(take)
		if stopped {
			return
		}
		if armed && err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			if d.idleWait() {
				continue
			}
			d.handOff()
			return
		}
		if d.l.isDone() {
			return
		}
		if err == nil {
			d.srcEOF.Store(true)
			d.l.CloseSeen(d.srcSide(), false, stamp)
			d.pushClose(chunk{kind: evFin}, stamp)
			return
		}
		d.l.CloseSeen(d.srcSide(), true, stamp)
		// ECONNRESET is the usual case; any other failure of a live
		// socket also means the peer is gone abruptly, so model it the
		// same way rather than as an orderly close.
		d.pushClose(chunk{kind: evRst}, stamp)
		return
	}
}

// take queues one chunk of n bytes read into buf, which arrived at stamp,
// and reports whether the reader may read on: false once the link is torn
// down. The reader's chunkReader calls it.
func (d *direction) take(buf *[]byte, n int, stamp time.Time) bool {
	if d == d.l.down {
		d.l.ServerData(stamp, (*buf)[:n])
	}
	c := chunk{kind: evData, n: n}
	if n <= smallChunk {
		// Copy small chunks into a small pooled buffer so thousands of
		// connections each with a few bytes in flight do not each pin
		// a whole read buffer for RTT/2.
		small := smallPool.Get().(*[]byte)
		c.data, c.pool = (*small)[:copy(*small, (*buf)[:n])], small
		bufPool.Put(buf)
	} else {
		c.data, c.pool = (*buf)[:n], buf
	}
	d.push(c, stamp)
	d.lastChunk = time.Now()
	return d.waitSpace()
}

// armIdle sets the read deadline after which an idle reader hands its wait off.
func (d *direction) armIdle() bool {
	if fault.On(fault.IdleReaderHeld) {
		return false
	}
	d.lastChunk = time.Now()
	return d.src.SetReadDeadline(d.lastChunk.Add(idleHandoff)) == nil
}

// idleWait is called when the read deadline passed: true when a chunk came
// less than idleHandoff before, and the deadline is moved to idleHandoff
// after it, so the reader waits on; false when the direction was idle for
// idleHandoff, and the reader hands its wait off.
func (d *direction) idleWait() bool {
	at := d.lastChunk.Add(idleHandoff)
	if !time.Now().Before(at) {
		return false
	}
	return d.src.SetReadDeadline(at) == nil
}

// handOff gives the idle wait of this direction's reader to a fresh goroutine.
func (d *direction) handOff() {
	_ = d.src.SetReadDeadline(time.Time{})
	if d.l.p.parker.Park(&d.park, d, d.src) {
		return
	}
	d.Wake()
}

// Wake starts the direction's reader on a fresh goroutine: after an idle wait, from
// its last reader (handOff) or from the idle parker's goroutine once src is ready. Both
// callers are counted in p.wg, so this Add cannot race Wait.
func (d *direction) Wake() {
	d.l.p.wg.Add(1)
	go d.readLoop()
}

// waitSpace blocks while the direction has maxQueued bytes in flight.
func (d *direction) waitSpace() bool {
	for {
		d.mu.Lock()
		full := d.queued >= maxQueued
		d.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-d.space:
		case <-d.l.done:
			return false
		}
	}
}
