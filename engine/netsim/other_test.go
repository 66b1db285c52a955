//go:build !unix

package netsim

import (
	"net"
	"testing"
)

// refusingAddr returns a loopback port that refuses connections. Without
// the Unix socket calls to bind a socket that never listens, it listens on
// a fresh port and closes it; a parallel test could take the port over in
// between, which is unlikely on an ephemeral port.
func refusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
