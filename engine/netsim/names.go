package netsim

import (
	"github.com/kalab-dev/kalab/engine/netsim/conntrack"
)

// The names of netsim's own API (Config.OnConn, Stats) whose types live in conntrack.

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
