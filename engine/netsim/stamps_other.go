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

// inqHint returns -1: there is no TCP_INQ outside Linux, so a reader reads
// until EAGAIN to learn the socket is empty.
func inqHint([]byte) int { return -1 }
