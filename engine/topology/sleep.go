package topology

import (
	"time"
)

// timerSleep waits on a Go timer until at, or returns false once done closes: the sleep
// of the virtual clock, where a timer fires exactly on its instant.
func timerSleep(at time.Time, done <-chan struct{}) bool {
	d := time.Until(at)
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
