//go:build unix

package netsim

import (
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

// openReader returns the chunkReader of readLoop: it waits until the source
// socket is readable, takes a pooled buffer only then (so an idle link holds
// none) and reads with recvmsg, which also brings the kernel's receive
// timestamp where the platform gives one (Linux), and the bytes left in the
// socket after the read (TCP_INQ, Linux). The function and its state are
// made once per direction, so a read allocates nothing.
func (d *direction) openReader() (chunkReader, error) {
	rc, err := d.src.SyscallConn()
	if err != nil {
		return nil, err
	}
	if !d.stampsOn {
		// Once per socket: a reader starts again after every idle period.
		kernel.EnableStamps(rc)
		d.stampsOn = true
	}
	r := &recvState{d: d}
	r.try = r.recv
	return func(take func(*[]byte, int, time.Time) bool) (time.Time, bool, error) {
		r.take, r.drained, r.stopped, r.rerr, r.afterData = take, false, false, nil, false
		err := rc.Read(r.try)
		r.take = nil
		d.l.p.chunksRead.Add(int64(r.chunks))
		d.l.p.emptyAfterData.Add(int64(r.emptyAfterData))
		r.chunks, r.emptyAfterData = 0, 0
		if err == nil {
			err = r.rerr
		}
		return r.end, r.stopped, err
	}, nil
}

// recvState is one direction's reader state for the callback RawConn.Read calls.
type recvState struct {
	d    *direction
	try  func(fd uintptr) bool // recv, bound once
	take func(buf *[]byte, n int, stamp time.Time) bool
	// drained: the last read took all the socket had, by the kernel's count.
	drained bool
	stopped bool      // take said stop
	end     time.Time // when the end of file or error arrived
	rerr    error
	// afterData: the last read of this call took data. chunks and
	// emptyAfterData count for the proxy's totals (Proxy.chunksRead).
	afterData              bool
	chunks, emptyAfterData int
}

// recv reads fd and hands each chunk of data to take until the socket has
// nothing more (false: RawConn.Read waits until it is readable and calls
// again), or a read ends in end of file or an error, or take says stop
// (true: the read is over).
//
// A read that the kernel says left the socket empty (TCP_INQ 0) is not
// followed by another read that would only answer EAGAIN: recv returns
// false at once, and RawConn.Read waits on the netpoller. That is safe only
// within one RawConn.Read call: it clears the socket's readiness on entry
// (internal/poll's prepareRead, runtime.poll_runtime_pollReset), so a chunk
// that arrived between two calls would wait unseen. Within a call, data that
// arrives after the read marks the socket ready (the netpoller is
// edge-triggered and every arrival is an edge), and the wait returns at once.
// So each call starts with a read, as internal/poll's own loops do. This
// took a proxied request from 4 recvmsg (two answering EAGAIN) and a peek to
// 2 recvmsg.
func (r *recvState) recv(fd uintptr) bool {
	d := r.d
	for {
		if r.drained {
			r.drained, r.afterData = false, false
			return false
		}
		b := bufPool.Get().(*[]byte)
		var n, oobn int
		var err error
		for {
			n, oobn, _, _, err = syscall.Recvmsg(int(fd), *b, d.oob[:], 0)
			if err != syscall.EINTR {
				break
			}
		}
		if err == syscall.EAGAIN {
			bufPool.Put(b)
			if r.afterData {
				r.emptyAfterData++
			}
			r.afterData = false
			return false
		}
		oob := d.oob[:max(oobn, 0)]
		stamp := kernel.Arrival(time.Now(), oob)
		if err != nil || n <= 0 {
			bufPool.Put(b)
			if err == nil && !d.finAt.IsZero() {
				stamp = d.finAt
			}
			r.end, r.rerr = stamp, err
			return true
		}
		left := kernel.InqHint(oob)
		if d == d.l.down && left != 0 && kernel.PeekEOF(fd) {
			// The server's FIN is already queued behind this data: it came
			// with the data (a close straight after a response, or after a
			// TLS close_notify), whenever this goroutine gets to read it.
			// With nothing left (TCP_INQ counts a queued FIN as 1) there is
			// no FIN, and no peek.
			d.finAt = stamp
		}
		r.chunks++
		r.afterData = true
		if !r.take(b, n, stamp) {
			r.stopped = true
			return true
		}
		r.drained = left == 0
	}
}
