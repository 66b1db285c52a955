package vnet

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxKeptBuffer is the largest receive buffer kept for reuse once drained.
const maxKeptBuffer = 64 << 10

// pair is one connection: its two ends share a mutex.
type pair struct {
	n      *Network
	port   int           // the dialing end's local port
	active *atomic.Int64 // the listening port's active closes
	ends   [2]*Conn

	mu         sync.Mutex
	closedEnds int
}

// Conn is one end of a connection. It implements net.Conn. A Conn supports one
// reader, any number of concurrent writers and a Close racing with both.
type Conn struct {
	p      *pair
	peer   *Conn
	dialer bool
	local  *net.TCPAddr
	remote *net.TCPAddr
	notify chan struct{} // capacity 1: state changed for the reader

	// Guarded by p.mu.
	buf           []byte // received, unread bytes are buf[off:]
	off           int
	eof           bool // the peer's FIN has arrived
	reset         bool // a reset has arrived
	resetReported bool // a Read or Write has reported the reset
	closed        bool // Close or Abort was called
	wclosed       bool // no more writes: CloseWrite or Close
	rclosed       bool // CloseRead
	finSent       bool
	linger0       bool
	rdl, wdl      time.Time
	rtimer        timer

	// The kernel's view of the end, guarded by p.mu too: the segments it received (each
	// write delivered is one with data; a FIN or a keepalive probe is one without), when
	// data last crossed it either way, and its keepalive.
	segsIn, dataSegsIn uint32
	lastActive         time.Time
	ka                 net.KeepAliveConfig
	katimer            timer
}

// LocalAddr returns the end's address, a *net.TCPAddr.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address, a *net.TCPAddr. For the accepted end it
// carries the dialing end's port, unique among the network's open connections.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

// Read reads received bytes into b. It blocks until bytes are there (and returns
// those, up to len(b)), the peer's FIN has arrived after them (io.EOF), a reset
// has arrived (an error wrapping syscall.ECONNRESET), the read deadline passes
// (os.ErrDeadlineExceeded) or the end is closed (net.ErrClosed).
func (c *Conn) Read(b []byte) (int, error) {
	p := &c.p.mu
	for {
		p.Lock()
		if c.closed {
			p.Unlock()
			signal(c.notify)
			return 0, c.opErr("read", net.ErrClosed)
		}
		if len(b) == 0 {
			p.Unlock()
			return 0, nil
		}
		if !c.rdl.IsZero() && !time.Now().Before(c.rdl) {
			p.Unlock()
			signal(c.notify)
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		if c.reset {
			c.resetReported = true
			p.Unlock()
			signal(c.notify)
			return 0, c.opErr("read", os.NewSyscallError("read", syscall.ECONNRESET))
		}
		if c.off < len(c.buf) {
			n := copy(b, c.buf[c.off:])
			c.off += n
			if c.off == len(c.buf) {
				c.drainLocked()
			} else {
				signal(c.notify)
			}
			p.Unlock()
			return n, nil
		}
		if c.eof || c.rclosed {
			p.Unlock()
			signal(c.notify)
			return 0, io.EOF
		}
		p.Unlock()
		<-c.notify
	}
}

// drainLocked empties the receive buffer, keeping a small one for reuse.
func (c *Conn) drainLocked() {
	if cap(c.buf) > maxKeptBuffer {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	c.off = 0
}

// appendLocked adds b to the receive buffer.
func (c *Conn) appendLocked(b []byte) {
	switch {
	case c.off == len(c.buf):
		c.buf, c.off = c.buf[:0], 0
	case c.off >= cap(c.buf)/2 && len(b) > cap(c.buf)-len(c.buf):
		k := copy(c.buf, c.buf[c.off:])
		c.buf, c.off = c.buf[:k], 0
	}
	c.buf = append(c.buf, b...)
}

// resetLocked makes a reset arrive at c: its unread bytes are discarded.
func (c *Conn) resetLocked() {
	c.reset = true
	c.buf, c.off = nil, 0
	signal(c.notify)
}

// Write copies b into the peer's receive queue and returns len(b); it never
// blocks. It fails after this end's Close (net.ErrClosed), after CloseWrite
// (EPIPE), once the write deadline has passed (os.ErrDeadlineExceeded) and after a
// reset has arrived (ECONNRESET if no Read or Write has reported it yet, else
// EPIPE). A
// write to a peer that is closed succeeds, and a reset arrives back at once.
func (c *Conn) Write(b []byte) (int, error) {
	p := &c.p.mu
	p.Lock()
	var err error
	switch {
	case c.closed:
		err = net.ErrClosed
	case !c.wdl.IsZero() && !time.Now().Before(c.wdl):
		err = os.ErrDeadlineExceeded
	case c.reset && !c.resetReported:
		c.resetReported = true
		err = os.NewSyscallError("write", syscall.ECONNRESET)
	case c.reset || c.wclosed:
		err = os.NewSyscallError("write", syscall.EPIPE)
	}
	if err != nil {
		p.Unlock()
		return 0, c.opErr("write", err)
	}
	if len(b) == 0 {
		p.Unlock()
		return 0, nil
	}
	peer := c.peer
	switch {
	case peer.closed:
		c.resetLocked()
	case peer.rclosed:
	default:
		peer.appendLocked(b)
		peer.segsIn++
		peer.dataSegsIn++
		now := time.Now()
		c.lastActive, peer.lastActive = now, now
		signal(peer.notify)
	}
	p.Unlock()
	c.p.n.event()
	return len(b), nil
}

// Close closes the end. The peer gets a reset if this end had unread received
// data (or SetLinger(0) was called), else a FIN after the data already written.
// Reads, writes and deadline changes on this end then fail with net.ErrClosed.
func (c *Conn) Close() error { return c.close(false) }

// Abort closes the end as with SO_LINGER 0: the peer gets a reset at once.
func (c *Conn) Abort() error { return c.close(true) }

func (c *Conn) close(abort bool) error {
	p := c.p
	p.mu.Lock()
	if c.closed {
		p.mu.Unlock()
		return c.opErr("close", net.ErrClosed)
	}
	c.closed, c.wclosed = true, true
	if c.rtimer != nil {
		c.rtimer.Stop()
	}
	if c.katimer != nil {
		c.katimer.Stop()
	}
	peer := c.peer
	event, active := false, false
	if !c.reset && !peer.closed {
		switch {
		case abort || c.linger0 || c.off < len(c.buf):
			peer.resetLocked()
			event = true
		case !c.finSent:
			active = c.sendFINLocked()
			event = true
		}
	}
	c.buf, c.off = nil, 0
	signal(c.notify)
	p.closedEnds++
	both := p.closedEnds == 2
	p.mu.Unlock()
	if active {
		c.countActive()
	}
	if both {
		p.n.removePair(p)
	}
	if event {
		p.n.event()
	}
	return nil
}

// sendFINLocked delivers c's FIN to the peer and reports whether it is the
// connection's first FIN.
func (c *Conn) sendFINLocked() bool {
	c.finSent = true
	c.peer.eof = true
	c.peer.segsIn++
	signal(c.peer.notify)
	return !c.peer.finSent
}

func (c *Conn) countActive() {
	c.p.active.Add(1)
	if c.dialer {
		c.p.n.activeDial.Add(1)
	} else {
		c.p.n.activeAccept.Add(1)
	}
}

// CloseWrite shuts down the sending side: the peer reads io.EOF after the data
// already written. This end can still read; its writes fail with EPIPE.
func (c *Conn) CloseWrite() error {
	p := c.p
	p.mu.Lock()
	if c.closed {
		p.mu.Unlock()
		return c.opErr("close", net.ErrClosed)
	}
	if c.wclosed {
		p.mu.Unlock()
		return nil
	}
	c.wclosed = true
	event, active := false, false
	if !c.reset && !c.peer.closed && !c.finSent {
		active = c.sendFINLocked()
		event = true
	}
	p.mu.Unlock()
	if active {
		c.countActive()
	}
	if event {
		p.n.event()
	}
	return nil
}

// CloseRead shuts down the receiving side: unread data is discarded, data that
// arrives later is dropped, and Read returns io.EOF.
func (c *Conn) CloseRead() error {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.closed {
		return c.opErr("close", net.ErrClosed)
	}
	c.rclosed = true
	c.buf, c.off = nil, 0
	signal(c.notify)
	return nil
}

// SetLinger with sec 0 makes Close reset the peer, as Abort does; any other value
// restores the orderly Close.
func (c *Conn) SetLinger(sec int) error {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.closed {
		return c.opErr("set", net.ErrClosed)
	}
	c.linger0 = sec == 0
	return nil
}

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the time after which Read fails with an error wrapping
// os.ErrDeadlineExceeded, waking a Read blocked now; the zero time clears it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	p := &c.p.mu
	p.Lock()
	defer p.Unlock()
	if c.closed {
		return c.opErr("set", net.ErrClosed)
	}
	c.rdl = t
	if t.IsZero() {
		if c.rtimer != nil {
			c.rtimer.Stop()
		}
		return nil
	}
	d := time.Until(t)
	if d <= 0 {
		if c.rtimer != nil {
			c.rtimer.Stop()
		}
		signal(c.notify)
		return nil
	}
	if c.rtimer == nil {
		c.rtimer = c.p.n.afterFunc(d, c.wake)
	} else {
		c.rtimer.Reset(d)
	}
	return nil
}

func (c *Conn) wake() { signal(c.notify) }

// SetWriteDeadline sets the time after which Write fails with an error wrapping
// os.ErrDeadlineExceeded. Writes never block, so only a deadline already passed
// at the time of a Write matters.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	p := &c.p.mu
	p.Lock()
	defer p.Unlock()
	if c.closed {
		return c.opErr("set", net.ErrClosed)
	}
	c.wdl = t
	return nil
}

// Readable reports, without blocking, whether a Read would return at once
// regardless of deadlines: data buffered, EOF or a reset pending, or the end
// closed. It stands for recv(MSG_PEEK|MSG_DONTWAIT) not failing with EAGAIN.
func (c *Conn) Readable() bool {
	p := &c.p.mu
	p.Lock()
	defer p.Unlock()
	return c.off < len(c.buf) || c.eof || c.reset || c.closed || c.rclosed
}

// Pending reports whether unread data is buffered, whether the peer's FIN has
// arrived and whether a reset has arrived.
func (c *Conn) Pending() (data, eof, reset bool) {
	p := &c.p.mu
	p.Lock()
	defer p.Unlock()
	return c.off < len(c.buf), c.eof, c.reset
}

// Buffered returns the number of received bytes not yet read.
func (c *Conn) Buffered() int {
	p := &c.p.mu
	p.Lock()
	defer p.Unlock()
	return len(c.buf) - c.off
}

// SegsIn reports how many segments this end received, and how many of them carried data,
// as Linux's TCP_INFO counts them (tcpi_segs_in, tcpi_data_segs_in): one per write
// delivered, and one without data per FIN or keepalive probe. There are no ACKs to count:
// nothing is in flight between the two ends of an in-memory connection.
func (c *Conn) SegsIn() (segs, data uint32) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.segsIn, c.dataSegsIn
}

// SetKeepAliveConfig turns on the kernel's keepalive as *net.TCPConn's does: once no data
// has crossed the end for cfg.Idle, it sends the peer a probe (a segment without data), and
// another each cfg.Idle after that while the connection stays idle, since the peer's kernel
// acknowledges each at once (Linux restarts the idle clock on that ACK). A probe that finds
// the peer closed draws a reset, as from a kernel that no longer knows the connection.
// Probes go unanswered nowhere here: cfg.Interval and cfg.Count matter only on a path that
// loses them, which an in-memory connection is not.
func (c *Conn) SetKeepAliveConfig(cfg net.KeepAliveConfig) error {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.closed {
		return c.opErr("set", net.ErrClosed)
	}
	c.ka = cfg
	if c.katimer != nil {
		c.katimer.Stop()
		c.katimer = nil
	}
	if !cfg.Enable || cfg.Idle <= 0 {
		return nil
	}
	if c.lastActive.IsZero() {
		c.lastActive = time.Now()
	}
	c.katimer = c.p.n.afterFunc(max(time.Until(c.lastActive.Add(cfg.Idle)), 0), c.keepalive)
	return nil
}

// keepalive is the end's keepalive timer: a probe when the end has been idle for ka.Idle,
// else a wait for the rest of it.
func (c *Conn) keepalive() {
	p := c.p
	p.mu.Lock()
	if c.closed || c.reset || c.katimer == nil {
		p.mu.Unlock()
		return
	}
	now := time.Now()
	if wait := c.lastActive.Add(c.ka.Idle).Sub(now); wait > 0 {
		c.katimer.Reset(wait)
		p.mu.Unlock()
		return
	}
	if c.peer.closed {
		c.resetLocked() // the probe reached a closed socket
		p.mu.Unlock()
		p.n.event()
		return
	}
	c.peer.segsIn++
	c.lastActive = now // the probe's ACK
	c.katimer.Reset(c.ka.Idle)
	p.mu.Unlock()
	p.n.event()
}
