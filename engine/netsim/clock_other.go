//go:build !linux

package netsim

import (
	"os"
	"time"
)

// armTimerFD is never called outside Linux: newTimerFD gives no timer.
func armTimerFD(uintptr, time.Time) {}

// newTimerFD reports that there is no timerfd outside Linux, so the clock
// sleeps on a Go timer until a waiter's spin window opens and yields from
// there (see clock and doc.go for the precision this gives).
func newTimerFD() (*os.File, uintptr) { return nil, 0 }
