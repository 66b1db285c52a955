//go:build unix && !linux

package netsim

import (
	"syscall"
	"time"
)

// enableKernelStamps does nothing outside Linux: SO_TIMESTAMPNS is
// Linux's, so chunks are stamped when the reader runs, which adds the
// reader goroutine's wake-up latency to the modeled delay.
func enableKernelStamps(syscall.RawConn) {}

// arrival returns now: there are no kernel timestamps to read.
func arrival(now time.Time, _ []byte) time.Time { return now }
