package netsim

import (
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/clock"
	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

// The names netsim keeps for what moved to its packages clock and kernel.

// PortableEnv names the environment variable that, set to 1, makes netsim use on
// Linux only what it has on every platform (kernel.PortableEnv).
const PortableEnv = kernel.PortableEnv

// RaiseFileLimit raises the soft limit on open files toward need (kernel.RaiseFileLimit).
func RaiseFileLimit(need uint64) error { return kernel.RaiseFileLimit(need) }

// FileLimit returns the current soft limit on open file descriptors (kernel.FileLimit).
func FileLimit() (uint64, error) { return kernel.FileLimit() }

// Sleeper waits for instants on the process-wide precise clock (clock.Sleeper).
type Sleeper = clock.Sleeper

// Sleep waits on the precise clock until at, or returns false as soon as done closes
// (clock.Sleep).
func Sleep(at time.Time, done <-chan struct{}) bool { return clock.Sleep(at, done) }
