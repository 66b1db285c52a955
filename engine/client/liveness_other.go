//go:build !unix

package client

import "syscall"

// alive cannot peek without the Unix socket calls (Windows), so every idle connection counts as alive.
func alive(rc syscall.RawConn, eofOnly bool) bool { return true }
