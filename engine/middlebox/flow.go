package middlebox

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
)

// delackMax is Linux's longest delayed ACK (TCP_DELACK_MAX, HZ/5 in include/net/tcp.h):
// a segment without data later than this after the flow's last data is not the ACK of
// that data, so the box counts it as a probe (keepalive, or a bare ACK of its own).
const delackMax = 200 * time.Millisecond

// end is one of a flow's two sockets.
type end struct {
	conn     net.Conn
	closed   bool   // the box closed its socket to this end
	readDone bool   // the end sent its FIN or its reset, or the socket closed
	segs     uint32 // segments the kernel counted in on this socket (tcpi_segs_in)
	dataSegs uint32 // of which carried data (tcpi_data_segs_in)
	base     uint32 // segs when the flow expired: what came after was dropped
}

// flow is one client connection and the box's connection upstream.
type flow struct {
	b        *Box
	mu       sync.Mutex
	ends     [2]end // [0] the client's side, [1] the server's
	last     time.Time
	lastData time.Time
	expired  bool
	finished bool
	done     chan struct{}
}

func idx(s Side) int {
	if s == Client {
		return 0
	}
	return 1
}

func other(s Side) Side { return Both &^ s }

func newFlow(b *Box, c, u net.Conn) *flow {
	now := time.Now()
	f := &flow{b: b, last: now, lastData: now, done: make(chan struct{})}
	f.ends[0].conn, f.ends[1].conn = c, u
	for i := range f.ends {
		f.ends[i].segs, f.ends[i].dataSegs, _ = segsIn(f.ends[i].conn)
	}
	return f
}

// pipe copies what the from end sends to the other end while the flow lives; once it
// expired, what arrives is dropped, or answered with a reset.
func (f *flow) pipe(from Side) {
	defer f.b.wg.Done()
	src, dst := f.ends[idx(from)].conn, f.ends[idx(other(from))].conn
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !f.forward(from, dst, buf[:n]) {
			return
		}
		if err != nil {
			f.readEnded(from, err)
			return
		}
	}
}

// forward passes data on a live flow, or handles a segment that arrived after expiry.
// It returns false when this end's socket is gone.
func (f *flow) forward(from Side, dst net.Conn, p []byte) bool {
	f.mu.Lock()
	if f.expired {
		f.b.stats.droppedBytes.Add(int64(len(p)))
		f.afterExpiry(from)
		gone := f.ends[idx(from)].closed
		f.mu.Unlock()
		return !gone
	}
	now := time.Now()
	f.last, f.lastData = now, now
	f.mu.Unlock()
	if _, err := dst.Write(p); err != nil {
		f.mu.Lock()
		f.closeEnd(from, true) // the other end reset: so does this one, as through a real path
		f.mu.Unlock()
		return false
	}
	return true
}

// readEnded handles an end's FIN or reset.
func (f *flow) readEnded(from Side, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &f.ends[idx(from)]
	e.readDone = true
	switch {
	case e.closed:
	case f.expired:
		f.afterExpiry(from) // the FIN (or RST) is a segment of an expired flow
		if !e.closed {
			f.closeEnd(from, false)
		}
	case errors.Is(err, syscall.ECONNRESET):
		f.closeEnd(other(from), true)
		f.closeEnd(from, false)
	default:
		closeWrite(f.ends[idx(other(from))].conn)
		if f.ends[idx(other(from))].readDone {
			f.closeEnd(Client, false)
			f.closeEnd(Server, false)
		}
	}
}

// afterExpiry is a segment from an end of an expired flow: a reset at the next segment
// answers it when the reset goes to that end; otherwise it is dropped (counted from the
// kernel's segment count when the socket closes). f.mu is held.
func (f *flow) afterExpiry(from Side) {
	cfg := f.b.cfg
	if cfg.Action == Reset && cfg.ResetAt == AtNextSegment && cfg.ResetTo&from != 0 && !f.ends[idx(from)].closed {
		f.closeEnd(from, true)
	}
}

// watch reads both sockets' segment counts every Poll: a segment without data (a
// keepalive probe) refreshes the flow as data does, and the idle timeout runs out here.
func (f *flow) watch() {
	defer f.b.wg.Done()
	if sleep := f.b.cfg.Sleep; sleep != nil {
		for at := time.Now().Add(f.b.cfg.Poll); sleep(at, f.done); at = at.Add(f.b.cfg.Poll) {
			f.tick(at)
		}
		return
	}
	t := time.NewTicker(f.b.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			return
		case now := <-t.C:
			f.tick(now)
		}
	}
}

func (f *flow) tick(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range []Side{Client, Server} {
		e := &f.ends[idx(s)]
		if e.closed {
			continue
		}
		segs, data, ok := segsIn(e.conn)
		if !ok || segs == e.segs {
			continue
		}
		// Segments without data count from the client's end only: the server's end of
		// the box faces kalab's link, whose sockets carry Go's default keepalive (15 s)
		// that no real path between the box and the server has. Data counts both ways.
		bare := segs-e.segs > data-e.dataSegs && s == Client && !fault.On(fault.ProbeBlind)
		newData := data != e.dataSegs
		e.segs, e.dataSegs = segs, data
		switch {
		case f.expired && (bare || newData):
			f.afterExpiry(s)
		case f.expired:
		case bare:
			if now.Sub(f.lastData) > delackMax && now.Sub(f.last) > f.b.cfg.Poll {
				f.b.stats.probeRefreshes.Add(1)
			}
			f.last = now
		}
	}
	if !f.expired && f.b.cfg.IdleTimeout > 0 && now.Sub(f.last) >= f.b.cfg.IdleTimeout {
		f.expire()
	}
}

// expire forgets the flow: from now on its segments are dropped, or reset. f.mu is held.
func (f *flow) expire() {
	f.expired = true
	f.b.stats.expired.Add(1)
	for i := range f.ends {
		if !f.ends[i].closed {
			f.ends[i].segs, f.ends[i].dataSegs, _ = segsIn(f.ends[i].conn)
			f.ends[i].base = f.ends[i].segs
		}
	}
	cfg := f.b.cfg
	if cfg.Action == Reset && cfg.ResetAt == AtExpiry {
		for _, s := range []Side{Client, Server} {
			if cfg.ResetTo&s != 0 && !f.ends[idx(s)].closed {
				f.closeEnd(s, true)
			}
		}
	}
}

// closeEnd closes the box's socket to one end, with an RST when reset; the segments that
// reached it after expiry are counted as dropped first. f.mu is held.
func (f *flow) closeEnd(s Side, reset bool) {
	e := &f.ends[idx(s)]
	if e.closed {
		return
	}
	if f.expired {
		if segs, _, ok := segsIn(e.conn); ok {
			f.b.stats.dropped.Add(int64(segs - e.base))
		}
	}
	e.closed = true
	if reset {
		if f.expired {
			f.b.stats.resets.Add(1) // the box's own; a live flow's reset is passed on
		}
		resetConn(e.conn)
	} else {
		_ = e.conn.Close()
	}
	if s == Client {
		f.b.stats.open.Add(-1)
	}
	if f.ends[0].closed && f.ends[1].closed && !f.finished {
		f.finished = true
		close(f.done)
		go f.b.forget(f)
	}
}

// closeAll closes both sockets (the box is closing).
func (f *flow) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeEnd(Client, false)
	f.closeEnd(Server, false)
}

// droppedOpen is what reached the still-open sockets of an expired flow.
func (f *flow) droppedOpen() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.expired {
		return 0
	}
	var n int64
	for i := range f.ends {
		if !f.ends[i].closed {
			if segs, _, ok := segsIn(f.ends[i].conn); ok {
				n += int64(segs - f.ends[i].base)
			}
		}
	}
	return n
}

func (b *Box) forget(f *flow) {
	b.mu.Lock()
	delete(b.flows, f)
	b.mu.Unlock()
}
