//go:build unix

package client

import "syscall"

// alive peeks at an idle socket without blocking, as urllib3 and curl do before reuse.
// Nothing to read means alive; a FIN (0 bytes) or an error such as ECONNRESET means the
// connection must not be reused. Stray bytes (a TLS close_notify, a late response) mean it
// is gone too, unless eofOnly: the check of libcurl 7.88.0 and 7.88.1 (their connection
// filters, lib/cfilters.c Curl_conn_is_alive, with any TLS library) takes waiting bytes
// for a live connection, so a server's close_notify hides its close.
func alive(rc syscall.RawConn, eofOnly bool) bool {
	if rc == nil {
		return true
	}
	var buf [1]byte
	ok := false
	err := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = err == syscall.EAGAIN || (eofOnly && err == nil && n > 0)
		return true // never wait for readiness: this is a peek
	})
	return err == nil && ok
}
