//go:build !linux

package middlebox

import "net"

// tcpSegsIn cannot read the kernel's segment counts outside Linux: only data refreshes a
// flow there, and dropped segments are not counted.
func tcpSegsIn(*net.TCPConn) (segs, data uint32, ok bool) { return 0, 0, false }
