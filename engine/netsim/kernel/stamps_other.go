//go:build unix && !linux

package kernel

import (
	"syscall"
	"time"
)

// EnableStamps does nothing outside Linux: SO_TIMESTAMPNS is
// Linux's, so chunks are stamped when the reader runs, which adds the
// reader goroutine's wake-up latency to the modeled delay.
func EnableStamps(syscall.RawConn) {}

// Arrival returns now: there are no kernel timestamps to read.
func Arrival(now time.Time, _ []byte) time.Time { return now }

// InqHint returns -1: there is no TCP_INQ outside Linux, so a reader reads
// until EAGAIN to learn the socket is empty.
func InqHint([]byte) int { return -1 }
