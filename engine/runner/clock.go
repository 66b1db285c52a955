package runner

import (
	"time"

	"github.com/kalab-dev/kalab/engine/netsim"
)

// preciseSleep waits until at on the simulated link's precise clock, or returns false once
// done closes: the server's idle closes wait on it so that they land on their instant
// rather than up to a millisecond late on a Go timer. Each call has its own waiter, since
// idle closes of different connections wait at once.
func preciseSleep(at time.Time, done <-chan struct{}) bool {
	var s netsim.Sleeper
	return s.Until(at, done)
}
