//go:build !linux

package kernel

import (
	"os"
	"time"
)

// ArmTimerFD is never called outside Linux: NewTimerFD gives no timer.
func ArmTimerFD(uintptr, time.Time) {}

// NewTimerFD reports that there is no timerfd outside Linux, so the clock
// sleeps on a Go timer until a waiter's spin window opens and yields from
// there (see package clock for the precision this gives).
func NewTimerFD() (*os.File, uintptr) { return nil, 0 }
