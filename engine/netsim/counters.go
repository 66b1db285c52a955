package netsim

import (
	"sync"
	"sync/atomic"
)

// counters are what a link counts, the same for the relay over loopback sockets (Proxy)
// and the one over the in-memory network (VirtualProxy), with the client ports it
// accepted.
type counters struct {
	accepted, open, peakOpen atomic.Int64
	bytesUp, bytesDown       atomic.Int64
	resetsUp, resetsDown     atomic.Int64
	overflows                atomic.Int64

	peersMu sync.Mutex
	peers   map[int]struct{} // client ports of every accepted connection
}

// addPeer notes the client port of an accepted connection.
func (c *counters) addPeer(port int) {
	c.peersMu.Lock()
	defer c.peersMu.Unlock()
	if c.peers == nil {
		c.peers = make(map[int]struct{})
	}
	c.peers[port] = struct{}{}
}

// AcceptedFrom reports whether the link accepted a connection from the client port peer:
// what tells this link's sockets from another's that reuse its port numbers.
func (c *counters) AcceptedFrom(peer int) bool {
	c.peersMu.Lock()
	defer c.peersMu.Unlock()
	_, ok := c.peers[peer]
	return ok
}

// Stats returns a snapshot of the counters.
func (c *counters) Stats() Stats {
	return Stats{
		Accepted:   c.accepted.Load(),
		Open:       c.open.Load(),
		PeakOpen:   c.peakOpen.Load(),
		BytesUp:    c.bytesUp.Load(),
		BytesDown:  c.bytesDown.Load(),
		ResetsUp:   c.resetsUp.Load(),
		ResetsDown: c.resetsDown.Load(),
		Overflows:  c.overflows.Load(),
	}
}
