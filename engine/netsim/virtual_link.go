package netsim

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/netsim/conntrack"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// vlink is one client connection of a VirtualProxy and its upstream connection: the
// virtual counterpart of link.
type vlink struct {
	p      *VirtualProxy
	client *vnet.Conn
	done   chan struct{} // closed at teardown

	up, down vdir

	mu       sync.Mutex
	upstream *vnet.Conn
	closed   bool
	finished int // directions whose FIN was delivered
	once     sync.Once

	conntrack.Tracker // the ConnRecord's bookkeeping; Opened is when the client connected
}

// vdir is one way of a vlink. Its reader goroutine reads src and pushes each chunk, FIN
// or reset into the proxy's event loop at its due time; the loop's goroutine delivers
// them to dst (deliver).
type vdir struct {
	l        *vlink
	other    *vdir
	src, dst *vnet.Conn
	bytes    *atomic.Int64
	resets   *atomic.Int64
	space    chan struct{} // signalled when queued bytes drop
	path     stage.Path    // the timing stages; the reader's own but for Due
	pieces   []stage.Piece // the reader's scratch for path.Data

	// Guarded by l.mu.
	// seq keeps items in order under jitter and drops a second reset; its NotBefore
	// holds the client's bytes until the modelled server accepted the connection
	// (openLater), which does not move the sending model's departures.
	seq    stage.Sequence
	queued int  // data bytes pushed and not yet delivered or dropped
	srcEOF bool // the reader saw FIN on src and stopped
	broken bool // dst failed; later data is dropped
	// tail is the last data item pushed while it waits to be delivered, and tailDue its
	// due time: data pushed for the same instant joins it (pushAt).
	tail    *arrival
	tailDue time.Time
}

// arrival is the bytes one data item delivers: those of every chunk pushed for its
// instant while it waited.
type arrival struct {
	data []byte
	open bool // not yet delivered: a chunk due at the same instant may join it
}

func newVLink(p *VirtualProxy, c *vnet.Conn, t0 time.Time, id uint64) *vlink {
	l := &vlink{p: p, client: c, done: make(chan struct{})}
	l.Begin(t0, id)
	up, down := p.cfg.paths(t0, p.paceUp, p.paceDown, p.delays)
	l.up = vdir{l: l, src: c, path: up, bytes: &p.bytesUp, resets: &p.resetsUp,
		space: make(chan struct{}, 1)}
	l.down = vdir{l: l, dst: c, path: down, bytes: &p.bytesDown, resets: &p.resetsDown,
		space: make(chan struct{}, 1)}
	l.up.other, l.down.other = &l.down, &l.up
	return l
}

// open dials the upstream at once and starts a reader per direction (see dial).
func (l *vlink) open() {
	if l.dial() {
		l.p.wg.Add(1) // the calling goroutine is counted, so this cannot race Close's Wait
		go l.up.readLoop()
	}
}

// openLater starts the client's reader now and dials the upstream at at, when the
// modelled server accepts the connection. What the client sends meanwhile waits at the
// server's edge, as it waits in a kernel for an accept: it is timed from when it was
// sent, and reaches the server no sooner than at.
func (l *vlink) openLater(at time.Time) {
	l.mu.Lock()
	l.up.seq.NotBefore = at
	l.mu.Unlock()
	l.p.wg.Add(1)
	go l.up.readLoop()
	l.p.loop.push(vevent{due: at, call: func() { l.dial() }})
}

// dial dials the upstream and starts the server's reader, and reports whether it did; a
// refused dial is answered with a reset. It runs on the accept loop's goroutine or the
// event loop's.
func (l *vlink) dial() bool {
	u, err := l.p.net.Dial(context.Background(), l.p.cfg.Upstream)
	if err != nil {
		l.p.upstreamRefused(portOf(l.client.RemoteAddr()), time.Now())
		l.refuse()
		return false
	}
	l.Connected(time.Now())
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = u.Close()
		return false
	}
	l.upstream = u
	l.up.dst, l.down.src = u, u
	l.mu.Unlock()
	l.p.wg.Add(1) // the calling goroutine is counted, so this cannot race Close's Wait
	go l.down.readLoop()
	return true
}

// refuse answers the client with a reset one round trip after it connected, as a refused
// SYN is (link.refused).
func (l *vlink) refuse() {
	l.RefusedAt(time.Now())
	l.down.pushAt(evRst, nil, stage.Refused(l.Opened(), l.p.cfg.RTT))
}

// dirFinished records a delivered FIN; when both directions are finished the link is
// torn down.
func (l *vlink) dirFinished() {
	l.mu.Lock()
	l.finished++
	both := l.finished >= 2
	l.mu.Unlock()
	if both {
		l.shutdown()
	}
}

// shutdown closes both connections, which ends the readers, and records the link once.
// Its items still in the event loop are dropped when they fall due.
func (l *vlink) shutdown() {
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
		l.p.removeLink(l)
		if f := l.p.cfg.OnConn; f != nil {
			f(l.Record(time.Now()))
		}
	})
}

func (l *vlink) isDone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// readLoop reads src until end of file, reset or teardown, and pushes each chunk with
// the instant it was read as its stamp: on the virtual clock, the instant it was sent.
func (d *vdir) readLoop() {
	l := d.l
	defer l.p.wg.Done()
	buf := make([]byte, bufSize)
	for {
		if !d.waitSpace() {
			return
		}
		n, err := d.src.Read(buf)
		now := time.Now()
		if n > 0 {
			if d == &l.down {
				l.ServerData(now, buf[:n])
			}
			d.push(evData, append([]byte(nil), buf[:n]...), now)
			continue
		}
		if err == nil {
			continue
		}
		if l.isDone() {
			return
		}
		if errors.Is(err, io.EOF) {
			l.CloseSeen(d.srcSide(), false, now)
			d.pushClose(evFin, now)
			d.stopAtEOF()
			return
		}
		// ECONNRESET is the usual case; any other failure of a live connection also
		// means the peer is gone abruptly, so it is carried as a reset too.
		l.CloseSeen(d.srcSide(), true, now)
		d.pushClose(evRst, now)
		return
	}
}

// stopAtEOF marks src as read to its FIN. From then on no reader notices a reset that
// data written to src's end brings back (a peer that closed answers data with one), so
// the event loop looks for it after each write (resetAfterWrite); the reset may also
// have come between the reader's last read and the mark, and is looked for here.
func (d *vdir) stopAtEOF() {
	d.l.mu.Lock()
	d.srcEOF = true
	d.l.mu.Unlock()
	if _, _, reset := d.src.Pending(); reset {
		d.other.writeFailed(syscall.ECONNRESET)
	}
}

// push queues an item stamped at stamp for delivery one delayed trip later. Data goes
// through the sending model first (stage.Path): it may leave the sender later, in
// several pieces, when the congestion window or the bandwidth holds it back.
func (d *vdir) push(k kind, data []byte, stamp time.Time) {
	if k == evData && d.path.Shaped() {
		d.pieces = d.path.Data(stamp, len(data), d.pieces[:0])
		off := 0
		for _, pc := range d.pieces {
			d.pushAt(evData, data[off:off+pc.N:off+pc.N], pc.At) // the piece's due time
			off += pc.N
		}
		return
	}
	d.pushAt(k, data, d.path.Due(stamp))
}

// pushClose queues a FIN or a reset: delayed like data (push).
func (d *vdir) pushClose(k kind, stamp time.Time) {
	if fault.On(fault.CloseUndelayed) {
		d.pushAt(k, nil, stamp)
		return
	}
	d.push(k, nil, stamp)
}

// pushAt queues an item for delivery at due, or later if an earlier item of the
// direction is due later, so items never overtake each other. A second reset is dropped
// (stage.Sequence).
func (d *vdir) pushAt(k kind, data []byte, due time.Time) {
	l := d.l
	l.mu.Lock()
	defer l.mu.Unlock()
	due, ok := d.seq.Place(k, due)
	if !ok {
		return
	}
	if d == &l.up && k == evData {
		l.ClientData(data, due)
	}
	d.queued += len(data)
	if k == evData {
		// Chunks due at one instant arrive as one: whether the sender's writes at an
		// instant reached the reader as one chunk or several depends on how their
		// goroutines took turns, so delivering them apart would let Go's scheduler decide
		// what the receiver sees at once (the response and the TLS close_notify a server
		// writes as it closes: read together, or the response alone and the client gone
		// before the alert lands). A kernel hands a reader everything that arrived.
		if t := d.tail; t != nil && t.open && d.tailDue.Equal(due) {
			t.data = append(t.data, data...)
			return
		}
		t := &arrival{data: data, open: true}
		d.tail, d.tailDue = t, due
		l.p.loop.push(vevent{due: due, d: d, kind: k, arr: t})
		return
	}
	// Pushed under l.mu: items of one direction enter the loop in the order of their
	// due times, so one due at the same instant as the one before it follows it.
	l.p.loop.push(vevent{due: due, d: d, kind: k, data: data})
}

// deliver performs one item's effect on dst, on the event loop's goroutine.
func (d *vdir) deliver(ev *vevent) {
	l := d.l
	if ev.arr != nil {
		l.mu.Lock()
		ev.arr.open = false // what is pushed from now on is a later item's
		ev.data = ev.arr.data
		l.mu.Unlock()
	}
	if l.isDone() {
		// Torn down: what was in flight is dropped, as link's queues are.
		d.release(len(ev.data))
		return
	}
	l.p.cfg.Lag.Add(time.Since(ev.due))
	l.mu.Lock()
	broken := d.broken
	l.mu.Unlock()
	if d.dst == nil {
		// The client's bytes of a link whose upstream refused when the modelled server
		// got to it: they never reach a server.
		d.release(len(ev.data))
		return
	}
	switch ev.kind {
	case evData:
		if broken {
			d.release(len(ev.data))
			return
		}
		if d == &l.up {
			l.WroteUpstream(time.Now())
		}
		_, err := d.dst.Write(ev.data)
		d.release(len(ev.data))
		if err != nil {
			d.writeFailed(err)
			return
		}
		d.wrote(len(ev.data))
	case evFin:
		if broken {
			return
		}
		if err := d.dst.CloseWrite(); err != nil {
			d.writeFailed(err)
			return
		}
		l.dirFinished()
	case evRst:
		_ = d.dst.Abort()
		d.resets.Add(1)
		l.shutdown()
	}
}

// release takes n delivered or dropped bytes off the direction and wakes its reader if
// it waits for room.
func (d *vdir) release(n int) {
	if n == 0 {
		return
	}
	d.l.mu.Lock()
	d.queued -= n
	d.l.mu.Unlock()
	select {
	case d.space <- struct{}{}:
	default:
	}
}

// waitSpace blocks while the direction has maxQueued bytes in flight.
func (d *vdir) waitSpace() bool {
	for {
		d.l.mu.Lock()
		full := d.queued >= maxQueued
		d.l.mu.Unlock()
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

// wrote counts a chunk of n bytes delivered and looks for the reset it may have
// brought back.
func (d *vdir) wrote(n int) {
	d.bytes.Add(int64(n))
	d.l.Delivered(d == &d.l.up, n)
	d.resetAfterWrite()
}

// resetAfterWrite carries back the reset that a write to an end that already closed
// brings (the network marks it on dst at once), when dst's reader stopped at its FIN and
// will not read it: the stale-connection race that link's watchReset catches on a socket.
func (d *vdir) resetAfterWrite() {
	d.l.mu.Lock()
	eof := d.other.srcEOF
	d.l.mu.Unlock()
	if !eof {
		return // dst's reader is still reading and meets the reset itself
	}
	if _, _, reset := d.dst.Pending(); reset {
		d.writeFailed(syscall.ECONNRESET)
	}
}

// writeFailed handles a failed write to dst. A reset there travels back to the other
// side as a reset; anything else means the link is unusable.
func (d *vdir) writeFailed(err error) {
	d.l.mu.Lock()
	was := d.broken
	d.broken = true
	d.l.mu.Unlock()
	if was {
		return
	}
	if isReset(err) {
		now := time.Now()
		d.l.CloseSeen(d.other.srcSide(), true, now)
		d.other.push(evRst, nil, now)
		return
	}
	d.l.shutdown()
}

// srcSide is the end this direction reads from.
func (d *vdir) srcSide() Side {
	if d == &d.l.up {
		return SideClient
	}
	return SideServer
}
