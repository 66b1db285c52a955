//go:build unix

package netsim

import (
	"net"
	"syscall"
	"time"
)

// openReader returns the function readLoop calls for each chunk: it waits
// until the source socket is readable, takes a pooled buffer only then (so
// an idle link holds none) and reads with recvmsg, which also brings the
// kernel's receive timestamp where the platform gives one (Linux). The
// function and its state are made once per direction, so a read allocates
// nothing.
func (d *direction) openReader() (func() (buf *[]byte, n int, stamp time.Time, err error), error) {
	rc, err := d.src.SyscallConn()
	if err != nil {
		return nil, err
	}
	enableKernelStamps(rc)
	r := &recvState{d: d}
	r.try = r.recv
	return func() (*[]byte, int, time.Time, error) {
		r.buf, r.n, r.oobn, r.rerr, r.finPending = nil, 0, 0, nil, false
		err := rc.Read(r.try)
		stamp := arrival(time.Now(), d.oob[:max(r.oobn, 0)])
		if err == nil {
			err = r.rerr
		}
		if r.finPending {
			d.finAt = stamp
		} else if err == nil && r.n <= 0 && !d.finAt.IsZero() {
			stamp = d.finAt
		}
		return r.buf, r.n, stamp, err
	}, nil
}

// recvState is one direction's reader state for the callback RawConn.Read calls.
type recvState struct {
	d          *direction
	try        func(fd uintptr) bool // recv, bound once
	buf        *[]byte
	n, oobn    int
	rerr       error
	finPending bool
}

// recv reads once from fd; false means the socket has nothing yet (EAGAIN).
func (r *recvState) recv(fd uintptr) bool {
	d := r.d
	b := bufPool.Get().(*[]byte)
	for {
		r.n, r.oobn, _, _, r.rerr = syscall.Recvmsg(int(fd), *b, d.oob[:], 0)
		if r.rerr != syscall.EINTR {
			break
		}
	}
	if r.rerr == syscall.EAGAIN {
		bufPool.Put(b)
		return false
	}
	r.buf = b
	if r.rerr == nil && r.n > 0 && d == d.l.down {
		// Is the server's FIN already queued behind this data? Then it came
		// with the data (a close straight after a response, or after a TLS
		// close_notify), whenever this goroutine gets to read it.
		r.finPending = peekEOF(fd)
	}
	return true
}

// sockErrIsReset reports whether the kernel has recorded a reset on c. It
// is used after writing to a peer that already sent FIN: on loopback the
// peer's RST to that write arrives before Write returns, but no later read
// or write would notice it.
func sockErrIsReset(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var soErr int
	if err := rc.Control(func(fd uintptr) {
		soErr, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
	}); err != nil {
		return false
	}
	return syscall.Errno(soErr) == syscall.ECONNRESET || syscall.Errno(soErr) == syscall.EPIPE
}

// peekEOF reports whether the socket's next read would return end of file: the peer's FIN
// is already queued.
func peekEOF(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == nil && n == 0
}

// rawWriter makes one non-blocking write to a socket, for a release on the
// shared clock's goroutine, which must not block. It is kept per direction
// and binds its callback once, so a write allocates nothing.
type rawWriter struct {
	conn *net.TCPConn
	rc   syscall.RawConn
	try  func(fd uintptr) bool
	data []byte
	n    int
	ok   bool
}

// write writes what dst takes of data at once: n bytes, and ok when the
// write succeeded (n may still be short of len(data)). A full socket or an
// error gives ok false; the caller leaves both to a blocking writer, which
// meets the error again and handles it.
func (w *rawWriter) write(dst *net.TCPConn, data []byte) (n int, ok bool) {
	if w.conn != dst {
		rc, err := dst.SyscallConn()
		if err != nil {
			return 0, false
		}
		w.conn, w.rc, w.try = dst, rc, w.once
	}
	w.data, w.n, w.ok = data, 0, false
	err := w.rc.Write(w.try)
	n, ok = w.n, w.ok && err == nil
	w.data = nil
	return n, ok
}

// once is the RawConn.Write callback: a single attempt, never a wait for
// room (a Go socket is non-blocking, so a full one answers EAGAIN).
func (w *rawWriter) once(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), w.data)
		if err == syscall.EINTR {
			continue
		}
		w.n, w.ok = max(n, 0), err == nil
		return true
	}
}
