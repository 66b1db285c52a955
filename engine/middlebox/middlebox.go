// Package middlebox is a TCP proxy on loopback that forgets idle flows, as NAT gateways,
// firewalls and cloud load balancers do: after an idle timeout it silently drops a flow's
// segments or resets its ends.
package middlebox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Action is what the box does to a flow whose idle timeout expired.
type Action string

// The actions on expiry.
const (
	// Drop silently discards every later segment of the flow, in both directions; neither
	// end learns anything. Only a new connection (a new SYN) makes a new flow.
	Drop Action = "drop"
	// Reset sends an RST to the ends in Config.ResetTo, at expiry or at the next segment.
	Reset Action = "reset"
)

// When is the moment a Reset box sends its RST.
type When string

// The moments of a reset.
const (
	AtExpiry      When = "expiry"       // as soon as the flow expires (Azure "TCP reset on idle")
	AtNextSegment When = "next-segment" // to an end when it sends its next segment (AWS NAT gateway)
)

// Side is a set of the flow's ends.
type Side uint8

// The ends of a flow.
const (
	Client Side = 1 << iota // the end that connected (behind the box)
	Server                  // the end the box connected to
	Both   = Client | Server
)

// Config is one middlebox. Durations are real time (the runner has scaled them).
type Config struct {
	// Upstream is the address the box connects each flow to (a loopback address).
	Upstream string
	// IdleTimeout is how long a flow may see no segment in either direction before the box
	// forgets it; 0 never forgets.
	IdleTimeout time.Duration
	Action      Action
	ResetAt     When
	ResetTo     Side
	// Listener and Dial, when set, are where the box accepts its flows and how it connects
	// them upstream instead of loopback sockets: the in-memory network of a run on the
	// virtual clock, whose connections count their segments themselves (SegsIn).
	Listener net.Listener
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// Poll is how often the box reads each socket's segment count (TCP_INFO) to see
	// segments that carry no data, such as TCP keepalive probes, and checks the idle
	// clock: a flow expires at most one Poll late. 0 picks IdleTimeout/100 between 1 ms
	// and 100 ms. Each poll costs two getsockopt calls per open flow.
	Poll time.Duration
	// Sleep, when set, is how the poll waits for its next instant: until at, or false once
	// done closes. A run on the virtual clock passes its network's order
	// (vnet.Network.Sleep), so that a poll and a keepalive probe due at one instant are
	// seen in the order the network queued them. When nil a Go ticker polls.
	Sleep func(at time.Time, done <-chan struct{}) bool
}

// Stats are the box's counters.
type Stats struct {
	Flows   int64 // connections accepted (each a flow)
	Open    int64 // flows with a socket still open on the client side
	Expired int64 // flows whose idle timeout ran out
	// DroppedSegments counts the TCP segments (data, FIN, keepalive probes) that reached
	// the box on an expired flow and went no further, as the kernel counted them.
	DroppedSegments int64
	DroppedBytes    int64 // payload bytes of those segments
	ResetsSent      int64 // RSTs the box sent on expired flows, one per end (not resets it passed on)
	// ProbeRefreshes counts the times a segment with no data (a keepalive probe, a bare
	// ACK) kept a flow alive that data alone would have let expire.
	ProbeRefreshes int64
}

// Box is a running middlebox.
type Box struct {
	cfg   Config
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	flows map[*flow]struct{}
	peers map[int]struct{} // the client ports of the flows accepted
	done  chan struct{}
	stats struct {
		flows, open, expired, dropped, droppedBytes, resets, probeRefreshes atomic.Int64
	}
}

// DefaultPoll is the box's poll for an idle timeout when Config.Poll is 0: a hundredth of
// the timeout, between 1 ms and 100 ms.
func DefaultPoll(idle time.Duration) time.Duration {
	return min(max(idle/100, time.Millisecond), 100*time.Millisecond)
}

// Start listens on 127.0.0.1 and forwards each accepted connection to cfg.Upstream as
// its own flow.
func Start(cfg Config) (*Box, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll(cfg.IdleTimeout)
	}
	// The box's own sockets send no keepalive probes (Go enables them on accepted and
	// dialed sockets by default): the ACKs they drew from an end would refresh the flow.
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("middlebox: %w", err)
		}
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{KeepAlive: -1}).DialContext
	}
	b := &Box{cfg: cfg, ln: ln, flows: map[*flow]struct{}{}, peers: map[int]struct{}{}, done: make(chan struct{})}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

func (c Config) validate() error {
	host, _, err := net.SplitHostPort(c.Upstream)
	if err != nil {
		return fmt.Errorf("middlebox: upstream %q: %w", c.Upstream, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("middlebox: upstream %q is not a loopback address", c.Upstream)
	}
	switch {
	case c.IdleTimeout < 0:
		return errors.New("middlebox: negative idle timeout")
	case c.Action != Drop && c.Action != Reset:
		return fmt.Errorf("middlebox: unknown action %q", c.Action)
	case c.Action == Reset && c.ResetAt != AtExpiry && c.ResetAt != AtNextSegment:
		return fmt.Errorf("middlebox: unknown reset moment %q", c.ResetAt)
	case c.Action == Reset && (c.ResetTo == 0 || c.ResetTo&^Both != 0):
		return errors.New("middlebox: a reset needs the ends it goes to")
	}
	return nil
}

// Addr is the address clients dial.
func (b *Box) Addr() string { return b.ln.Addr().String() }

// AcceptedFrom reports whether the box accepted a flow from the client port peer: what
// tells this box's sockets from another's that reuse its port numbers.
func (b *Box) AcceptedFrom(peer int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.peers[peer]
	return ok
}

// Stats returns a snapshot of the counters; the segments dropped on flows still open are
// read from their sockets now.
func (b *Box) Stats() Stats {
	dropped := b.stats.dropped.Load()
	b.mu.Lock()
	for f := range b.flows {
		dropped += f.droppedOpen()
	}
	b.mu.Unlock()
	return Stats{Flows: b.stats.flows.Load(), Open: b.stats.open.Load(), Expired: b.stats.expired.Load(),
		DroppedSegments: dropped, DroppedBytes: b.stats.droppedBytes.Load(),
		ResetsSent: b.stats.resets.Load(), ProbeRefreshes: b.stats.probeRefreshes.Load()}
}

// Close stops accepting, closes every flow's sockets and waits for its goroutines.
func (b *Box) Close() error {
	err := b.ln.Close()
	b.mu.Lock()
	select {
	case <-b.done:
	default:
		close(b.done)
	}
	for f := range b.flows {
		f.closeAll()
	}
	b.mu.Unlock()
	b.wg.Wait()
	return err
}

func (b *Box) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.stats.flows.Add(1)
		b.stats.open.Add(1)
		u, err := b.cfg.Dial(context.Background(), "tcp", b.cfg.Upstream)
		if err != nil {
			// Nothing behind the box: the client's connection ends as a refused one would.
			resetConn(c)
			b.stats.open.Add(-1)
			continue
		}
		f := newFlow(b, c, u)
		b.mu.Lock()
		select {
		case <-b.done:
			b.mu.Unlock()
			f.closeAll()
			b.stats.open.Add(-1)
			return
		default:
		}
		b.flows[f] = struct{}{}
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			b.peers[a.Port] = struct{}{}
		}
		b.mu.Unlock()
		b.wg.Add(3)
		go f.pipe(Client)
		go f.pipe(Server)
		go f.watch()
	}
}

// resetConn closes c with an RST (SO_LINGER 0) rather than a FIN.
func resetConn(c net.Conn) {
	if a, ok := c.(interface{ Abort() error }); ok {
		_ = a.Abort() // an in-memory connection
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// closeWrite sends c's FIN, keeping it open for reading.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// segsIn reads how many segments c received, and how many of them carried data: from the
// connection itself when it counts them (an in-memory one), else from the kernel
// (tcpSegsIn).
func segsIn(c net.Conn) (segs, data uint32, ok bool) {
	if sc, is := c.(interface{ SegsIn() (uint32, uint32) }); is {
		segs, data = sc.SegsIn()
		return segs, data, true
	}
	if tc, is := c.(*net.TCPConn); is {
		return tcpSegsIn(tc)
	}
	return 0, 0, false
}
