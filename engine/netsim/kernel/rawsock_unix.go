//go:build unix

package kernel

import (
	"net"
	"syscall"
)

// SockErrIsReset reports whether the kernel has recorded a reset on c. It
// is used after writing to a peer that already sent FIN: on loopback the
// peer's RST to that write arrives before Write returns, but no later read
// or write would notice it.
func SockErrIsReset(c *net.TCPConn) bool {
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

// PeekEOF reports whether the socket's next read would return end of file: the peer's FIN
// is already queued.
func PeekEOF(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == nil && n == 0
}

// RawWriter makes one non-blocking write to a socket, for a release on the
// shared clock's goroutine, which must not block. It is kept per direction
// and binds its callback once, so a write allocates nothing.
type RawWriter struct {
	conn *net.TCPConn
	rc   syscall.RawConn
	try  func(fd uintptr) bool
	data []byte
	n    int
	ok   bool
}

// Write writes what dst takes of data at once: n bytes, and ok when the
// write succeeded (n may still be short of len(data)). A full socket or an
// error gives ok false; the caller leaves both to a blocking writer, which
// meets the error again and handles it.
func (w *RawWriter) Write(dst *net.TCPConn, data []byte) (n int, ok bool) {
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
func (w *RawWriter) once(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), w.data)
		if err == syscall.EINTR {
			continue
		}
		w.n, w.ok = max(n, 0), err == nil
		return true
	}
}
