package netsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// VirtualProxy is the link on the virtual clock: the same model as Proxy over a
// vnet.Network, for runs inside a testing/synctest bubble, where time advances only
// when every goroutine waits and a real socket, the precise clock's timerfd and its spin
// cannot run.
//
// It listens on Config.Listen in the network and, for each client connection it
// accepts, dials Config.Upstream in the same network and relays both ways as Proxy does:
// each chunk is delayed RTT/2 plus its seeded jitter, never reordered, after the sending
// model (slow start, restart after idle, bandwidth) let it leave; the handshake's floors
// hold the first client byte until 1.5 RTT after the connect and the first server byte
// until 2 RTT; a FIN or a reset follows the data before it with the same delay; data
// that reaches a closed end comes back as a reset; an upstream that refuses becomes a
// reset one RTT after the connect; the listen queue of Backlog, AcceptDelay and
// RefuseOverflow is modelled (backlog.go); each link leaves a ConnRecord (OnConn).
//
// The timing is exact: a Go timer in a bubble fires at its instant, and a chunk is
// stamped with the instant it was read, which in a bubble is the instant it was written.
// Every timed step goes through one event loop per proxy (eventLoop): each direction of a
// link has one reader goroutine that pushes its chunks, and one scheduler goroutine
// performs them at their due times in (due time, push order). Config's SpinWindow and
// AllowRemoteUpstream do not apply (addresses are the network's); Lag records each
// release's lateness, which on the virtual clock is zero.
type VirtualProxy struct {
	cfg    Config
	net    *vnet.Network
	ln     *vnet.Listener
	delays *stage.Latency
	loop   *eventLoop
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	// paceUp and paceDown are the shared bottleneck (BandwidthShared), nil otherwise.
	paceUp, paceDown *stage.Pacer

	mu      sync.Mutex
	closed  bool
	links   map[*vlink]struct{}
	waiting map[*vnet.Conn]struct{} // in the modelled kernel queue, not yet accepted

	// The listen queue (backlog.go) and the modelled accept times DialContext gave the
	// connections it let in, by client port, for acceptLoop.
	qmu      sync.Mutex
	queue    stage.ListenQueue
	admitted map[int]time.Time

	counters

	closeOnce sync.Once
}

// StartVirtual validates cfg, listens on cfg.Listen ("127.0.0.1:0" when empty) in n and
// starts accepting connections, each paired with a fresh connection to cfg.Upstream in n.
// Call it inside the bubble whose clock the link should keep.
func StartVirtual(cfg Config, n *vnet.Network) (*VirtualProxy, error) {
	if n == nil {
		return nil, errors.New("netsim: virtual link without a network")
	}
	cfg.Listen = cmp.Or(cfg.Listen, "127.0.0.1:0")
	if err := cfg.checkModel(); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(cfg.Upstream); err != nil {
		return nil, fmt.Errorf("netsim: checking upstream address: %w", err)
	}
	ln, err := n.Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("netsim: listening on %s: %w", cfg.Listen, err)
	}
	p := &VirtualProxy{
		cfg:      cfg,
		net:      n,
		ln:       ln,
		delays:   cfg.latency(),
		done:     make(chan struct{}),
		links:    make(map[*vlink]struct{}),
		waiting:  make(map[*vnet.Conn]struct{}),
		queue:    stage.ListenQueue{Backlog: cfg.Backlog, Delay: cfg.AcceptDelay},
		admitted: make(map[int]time.Time),
	}
	p.paceUp, p.paceDown = cfg.sharedPacers()
	p.loop = newEventLoop(n, p.perform)
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.loop.run()
	}()
	go p.acceptLoop()
	return p, nil
}

// Addr returns the host:port clients dial in the network to go through the link.
func (p *VirtualProxy) Addr() string { return p.ln.Addr().String() }

// Handshake waits until a connection whose connect started at start would have its
// SYN-ACK back: one RTT later, on a Go timer (exact on the virtual clock). It returns at
// once when that instant has passed (a connect that DialContext held through SYN
// retries), and with ctx's cause if ctx ends first. A connect from local whose upstream
// refused it fails then with ECONNREFUSED (counters.connectResult).
func (p *VirtualProxy) Handshake(ctx context.Context, start time.Time, local net.Addr) error {
	due := start.Add(p.cfg.RTT)
	if fault.On(fault.HandshakeShort) {
		due = start // the SYN-ACK back at once: a round trip short, with the floors (newVLink)
	}
	if time.Now().Before(due) {
		if err := p.sleepUntil(ctx, due); err != nil {
			return fmt.Errorf("simulated TCP handshake: %w", err)
		}
		p.cfg.Lag.Add(time.Since(due))
	}
	return p.connectResult(local, start, p.ln.Addr())
}

// synRetrySchedule is when a client's kernel sends an unanswered SYN again, counted from
// the first: its initial RTO of 1 s (RFC 6298 section 2.1) doubling each time, up to Linux's
// default net.ipv4.tcp_syn_retries of 6; the connect fails synGiveUp after the first SYN.
// Linux 6.5 and later retry the first four linearly (tcp_syn_linear_timeouts) on a real
// kernel; the model keeps the classic schedule so a run is the same everywhere.
var synRetrySchedule = [...]time.Duration{time.Second, 3 * time.Second, 7 * time.Second,
	15 * time.Second, 31 * time.Second, 63 * time.Second}

// synGiveUp is when a connect whose SYNs all went unanswered fails (ETIMEDOUT).
const synGiveUp = 127 * time.Second

// dropsSYN reports whether the listen queue drops the SYNs that find it full: the
// kernel's queue of the default overflow, with a modelled server slow to accept.
func (p *VirtualProxy) dropsSYN() bool {
	return p.cfg.AcceptDelay > 0 && !p.cfg.RefuseOverflow
}

// DialContext dials addr in the network, as vnet.Network.DialContext does, with the
// listen queue's SYN drops for the link's own address: where the queue drops SYNs (the
// default overflow with an AcceptDelay), a connection that finds Backlog+1 connections
// waiting is not let in, and its SYN is sent again at the client kernel's retry times
// (1 s, 3 s, 7 s, ... after the first; synRetrySchedule) until one finds room; the connect
// then returns, or fails with ETIMEDOUT after synGiveUp. This is the connect a real
// kernel makes in front of Proxy's listener. Connections dialed in the network without
// it are queued whatever the queue holds: vnet itself has no SYN to drop.
func (p *VirtualProxy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if !p.dropsSYN() || addr != p.Addr() {
		return p.net.DialContext(ctx, network, addr)
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	start := time.Now()
	for i := 0; ; i++ {
		if c, ok, err := p.trySYN(ctx, addr); ok || err != nil {
			if err != nil {
				return nil, err
			}
			return c, nil
		}
		at := start.Add(synGiveUp)
		if i < len(synRetrySchedule) {
			at = start.Add(synRetrySchedule[i])
		}
		switch err := p.sleepUntil(ctx, at); {
		case errors.Is(err, net.ErrClosed):
			return p.net.DialContext(ctx, network, addr) // the listener is gone: refused
		case err != nil:
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: p.ln.Addr(), Err: err}
		}
		if i == len(synRetrySchedule) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: p.ln.Addr(), Err: os.NewSyscallError("connect", syscall.ETIMEDOUT)}
		}
	}
}

// trySYN lets a SYN sent now in when the queue has room: it dials and notes the
// connection's modelled accept time for acceptLoop, under qmu so acceptLoop, which takes
// qmu to look it up, cannot miss it.
func (p *VirtualProxy) trySYN(ctx context.Context, addr string) (*vnet.Conn, bool, error) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	now := time.Now()
	if p.queue.Full(now) {
		return nil, false, nil
	}
	c, err := p.net.Dial(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	p.admitted[portOf(c.LocalAddr())] = p.queue.Enter(now)
	return c, true, nil
}

// sleepUntil waits until at, on the network's order (vnet.Network.At: the SYN-ACKs of a
// burst's connections, due at one instant, wake their dials one at a time in the order the
// dials were made); it returns ctx's cause if ctx ends first, and net.ErrClosed if the
// proxy closes first.
func (p *VirtualProxy) sleepUntil(ctx context.Context, at time.Time) error {
	if !time.Now().Before(at) {
		return nil
	}
	ch := make(chan struct{})
	s := p.net.At(at, func() { close(ch) })
	defer s.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-p.done:
		return net.ErrClosed
	}
}

// Close stops accepting, tears down every link without waiting for what is in flight
// (each still records its ConnRecord, as closed at the run's end), resets the
// connections waiting in the modelled queue, and returns once every goroutine the proxy
// started has ended.
func (p *VirtualProxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true // no link is added after this
		links := make([]*vlink, 0, len(p.links))
		for l := range p.links {
			links = append(links, l)
		}
		waiting := make([]*vnet.Conn, 0, len(p.waiting))
		for c := range p.waiting {
			waiting = append(waiting, c)
		}
		p.mu.Unlock()
		close(p.done)
		_ = p.ln.Close()
		for _, l := range links {
			l.shutdown()
		}
		for _, c := range waiting {
			_ = c.Abort()
		}
		p.loop.close()
		p.wg.Wait()
		p.qmu.Lock()
		clear(p.admitted)
		p.qmu.Unlock()
	})
	return nil
}

// acceptLoop accepts the network's connections and gives each its modelled accept: at
// once, later when the modelled server is busy, or a refusal when the queue is full.
func (p *VirtualProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return // only Close closes the listener
		}
		c := nc.(*vnet.Conn)
		now := time.Now()
		switch {
		case p.dropsSYN():
			// The kernel's queue: the connection is the modelled server's when it accepts
			// it, and the link starts then, as Proxy's does after its accept.
			at := p.kernelAdmit(c, now)
			if !at.After(now) {
				p.accept(c, now, now, false)
				continue
			}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				_ = c.Abort()
				return
			}
			p.waiting[c] = struct{}{}
			p.mu.Unlock()
			p.loop.push(vevent{due: at, call: func() {
				p.mu.Lock()
				delete(p.waiting, c)
				p.mu.Unlock()
				p.accept(c, at, at, false)
			}})
		case p.cfg.RefuseOverflow && p.cfg.AcceptDelay > 0:
			// The modelled queue: accepted at once, dialed when the modelled server
			// accepts, refused when full (backlog.go, Proxy.admit).
			p.qmu.Lock()
			full := p.queue.Full(now)
			at := now
			if !full {
				at = p.queue.Enter(now)
			}
			p.qmu.Unlock()
			p.accept(c, now, at, full)
		default:
			p.accept(c, now, now, false)
		}
	}
}

// kernelAdmit returns when the modelled server accepts c, which arrived at now: the time
// DialContext noted for it, or for a connection dialed without it, its place in the
// queue whatever the queue holds.
func (p *VirtualProxy) kernelAdmit(c *vnet.Conn, now time.Time) time.Time {
	port := portOf(c.RemoteAddr())
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if at, ok := p.admitted[port]; ok {
		delete(p.admitted, port)
		return at
	}
	p.queue.Full(now) // forgets the connections accepted by now
	return p.queue.Enter(now)
}

// accept makes c a link that opened at t0 and dials the upstream at acceptAt, or is
// refused when the modelled queue overflowed.
func (p *VirtualProxy) accept(c *vnet.Conn, t0, acceptAt time.Time, overflow bool) {
	id := p.accepted.Add(1)
	l := newVLink(p, c, t0, uint64(id))
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.links[l] = struct{}{}
	p.addPeer(portOf(c.RemoteAddr()))
	n := p.open.Add(1)
	p.mu.Unlock()
	for {
		peak := p.peakOpen.Load()
		if n <= peak || p.peakOpen.CompareAndSwap(peak, n) {
			break
		}
	}
	switch {
	case overflow:
		p.overflows.Add(1)
		l.refuse()
	case acceptAt.After(time.Now()):
		l.openLater(acceptAt)
	default:
		l.open()
	}
}

// removeLink forgets a link once it has been torn down.
func (p *VirtualProxy) removeLink(l *vlink) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	p.open.Add(-1)
}

// perform carries out one item of the event loop, on the loop's goroutine.
func (p *VirtualProxy) perform(ev *vevent) {
	if ev.call != nil {
		ev.call()
		return
	}
	ev.d.deliver(ev)
}

// portOf returns the port of a network address, 0 if it has none.
func portOf(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	return 0
}
