//go:build !unix

package kernel

import "net"

// SockErrIsReset cannot read SO_ERROR portably here, so it reports no
// reset: a write racing a peer's close is then seen when the next read
// fails rather than at once.
func SockErrIsReset(*net.TCPConn) bool { return false }

// RawWriter has no non-blocking write here: every release goes to a
// writer goroutine, which writes through net.Conn.
type RawWriter struct{}

// Write writes nothing and reports false.
func (*RawWriter) Write(*net.TCPConn, []byte) (int, bool) { return 0, false }
