//go:build unix

package client

import "syscall"

// alive peeks at an idle socket without blocking, as urllib3 and curl do before reuse.
// Nothing to read means alive; a FIN (0 bytes), an error such as ECONNRESET, or stray
// bytes (a TLS close_notify, a late response) mean the connection must not be reused.
func alive(rc syscall.RawConn) bool {
	if rc == nil {
		return true
	}
	var buf [1]byte
	ok := false
	err := rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = err == syscall.EAGAIN
		return true // never wait for readiness: this is a peek
	})
	return err == nil && ok
}
