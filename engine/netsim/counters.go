package netsim

import (
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	peers   map[int]struct{}  // client ports of every accepted connection
	refused map[int]time.Time // client ports whose upstream refused the connection, and when
}

// upstreamRefused notes that the upstream refused the connection from the client port
// peer at at: the server listens on nothing (a drain, a restart's gap, an exited program).
func (c *counters) upstreamRefused(peer int, at time.Time) {
	c.peersMu.Lock()
	defer c.peersMu.Unlock()
	if c.refused == nil {
		c.refused = make(map[int]time.Time)
	}
	c.refused[peer] = at
}

// connectResult is what the client's connect from local, started at start, comes to once
// its SYN-ACK would be back: nil, or ECONNREFUSED when the upstream refused it. A server
// that listens on nothing answers the SYN with a reset, so the client's connect fails and
// opens no connection, as it would without the link; a refusal noted before start was an
// earlier connection's from the same port.
func (c *counters) connectResult(local net.Addr, start time.Time, addr net.Addr) error {
	port := 0
	if t, ok := local.(*net.TCPAddr); ok {
		port = t.Port
	}
	c.peersMu.Lock()
	at, ok := c.refused[port]
	c.peersMu.Unlock()
	if !ok || at.Before(start) {
		return nil
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
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
