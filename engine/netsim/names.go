package netsim

import (
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/clock"
	"github.com/kalab-dev/kalab/engine/netsim/conntrack"
	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

// The names netsim keeps for what lives in its packages clock, kernel and conntrack.

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

// ConnRecord is the life of one link as the proxy saw it on its upstream side
// (conntrack.Record).
type ConnRecord = conntrack.Record

// Side is an end of a link, or kalab itself when the proxy tore the link down.
type Side = conntrack.Side

// Sides of a link.
const (
	SideServer = conntrack.SideServer // the upstream
	SideClient = conntrack.SideClient
	SideKalab  = conntrack.SideKalab // the proxy closed the link (the run ended)
)

// Reason says how a link's first close happened.
type Reason = conntrack.Reason

// Reasons of a first close (conntrack.ReasonIdle and the others).
const (
	ReasonIdle          = conntrack.ReasonIdle
	ReasonAfterResponse = conntrack.ReasonAfterResponse
	ReasonReset         = conntrack.ReasonReset
	ReasonRefused       = conntrack.ReasonRefused
	ReasonRunEnd        = conntrack.ReasonRunEnd
)

// AfterResponseWindow separates a close straight after a response from an idle close
// (conntrack.AfterResponseWindow).
const AfterResponseWindow = conntrack.AfterResponseWindow
