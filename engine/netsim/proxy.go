package netsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/loopback"
	"github.com/kalab-dev/kalab/engine/netsim/clock"
	"github.com/kalab-dev/kalab/engine/netsim/kernel"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

// Proxy is a running latency proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg     Config
	quantum time.Duration // the coalescing quantum, clock.Quantum(cfg.RTT)
	ln      *net.TCPListener
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	delays *stage.Latency // the one-way delays with their seeded jitter

	mu     sync.Mutex
	closed bool
	links  map[*link]struct{}

	counters
	writers atomic.Int64 // writeLoop goroutines started (tests: how releases went)
	// Chunks of data the readers read, and reads that found a socket empty
	// straight after one that took data (tests and the performance gate:
	// TCP_INQ saves those, recvState.recv). Readers add their counts when a
	// read call ends, so a chunk costs no atomic add.
	chunksRead, emptyAfterData atomic.Int64

	queue stage.ListenQueue // the modelled accept queue (backlog.go); only acceptLoop uses it

	// paceUp and paceDown are the shared bottleneck (BandwidthShared), nil otherwise.
	paceUp, paceDown *stage.Pacer

	parker *kernel.Parker // where idle readers wait without a goroutine, nil without one

	closeOnce sync.Once
	closeErr  error
}

// Start validates cfg, binds the listener and starts accepting connections.
// Each accepted connection is paired with a fresh connection to cfg.Upstream.
func Start(cfg Config) (*Proxy, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if err := cfg.checkModel(); err != nil {
		return nil, err
	}
	listen, err := loopback.Check(cfg.Listen, false)
	if err != nil {
		return nil, fmt.Errorf("netsim: checking listen address: %w", err)
	}
	upstream, err := loopback.Check(cfg.Upstream, cfg.AllowRemoteUpstream)
	if err != nil {
		return nil, fmt.Errorf("netsim: checking upstream address: %w", err)
	}
	cfg.Listen, cfg.Upstream = listen, upstream
	switch {
	case cfg.SpinWindow == 0:
		cfg.SpinWindow = DefaultSpinWindow
	case cfg.SpinWindow < 0:
		cfg.SpinWindow = 0
	}

	laddr, err := net.ResolveTCPAddr("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("netsim: resolving listen address %q: %w", cfg.Listen, err)
	}
	var ln *net.TCPListener
	if cfg.Backlog > 0 && !cfg.RefuseOverflow {
		ln, err = kernel.ListenBacklog(laddr, cfg.Backlog)
	} else {
		ln, err = net.ListenTCP("tcp", laddr)
	}
	if err != nil {
		return nil, fmt.Errorf("netsim: listening on %s: %w", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		cfg:     cfg,
		quantum: cmp.Or(cfg.quantum, clock.Quantum(cfg.RTT)),
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		delays:  cfg.latency(),
		links:   make(map[*link]struct{}),
		queue:   stage.ListenQueue{Backlog: cfg.Backlog, Delay: cfg.AcceptDelay},
	}
	p.paceUp, p.paceDown = cfg.sharedPacers()
	if p.parker = kernel.NewParker(); p.parker != nil {
		p.wg.Add(1)
		go p.runParker()
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// runParker watches the idle parker until Close, which closes it.
func (p *Proxy) runParker() {
	defer p.wg.Done()
	p.parker.Run()
}

// Addr returns the host:port clients dial to go through the simulated link.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Handshake waits until a connection whose connect started at start would have its SYN-ACK
// back: one RTT later. A client that calls it after connecting to Addr sees the simulated
// TCP handshake as its connect time; its first bytes then reach the link when the link's
// own model lets them through (1.5 RTT after the connect), so nothing else changes. The
// wait goes through the same precise clock as the link, and its lateness is recorded in
// Config.Lag like a chunk's. A connect from local whose upstream refused it fails then
// with ECONNREFUSED (counters.connectResult): the link dials the upstream as it accepts,
// so its answer is in long before the round trip ends unless the machine stalls.
func (p *Proxy) Handshake(ctx context.Context, start time.Time, local net.Addr) error {
	due := start.Add(p.cfg.RTT)
	if fault.On(fault.HandshakeShort) {
		due = start // the SYN-ACK back at once: a round trip short, with the floors (newLink)
	}
	if !time.Now().Before(due) {
		// The connect itself took longer than the round trip: the kernel retried a SYN the
		// full listen queue dropped (server.backlog), or the machine stalled. No timer of
		// the model was armed, so there is no lateness of the model's to record; the
		// chunks' timers still record a stall.
		return p.connectResult(local, start, p.ln.Addr())
	}
	var (
		t *time.Timer
		w clock.Waiter
	)
	if !p.waitUntil(due, ctx.Done(), &t, &w) {
		if t != nil {
			t.Stop()
		}
		return fmt.Errorf("simulated TCP handshake: %w", context.Cause(ctx))
	}
	if t != nil {
		t.Stop()
	}
	p.cfg.Lag.Since(due)
	return p.connectResult(local, start, p.ln.Addr())
}

// Close stops accepting, tears down every link without waiting for queued
// data, and returns once every goroutine the proxy started has ended.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true // no link is added after this
		p.mu.Unlock()
		links := p.liveLinks()
		p.cancel()
		if err := p.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			p.closeErr = fmt.Errorf("netsim: closing listener: %w", err)
		}
		for _, l := range links {
			l.shutdown()
		}
		p.parker.Close()
		p.wg.Wait()
	})
	return p.closeErr
}

// liveLinks returns the links open now.
func (p *Proxy) liveLinks() []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or a connection aborted while queued: the
			// listener is still good, so back off briefly instead of giving up.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		t0 := time.Now()
		id := p.accepted.Add(1)
		l := newLink(p, c, t0, uint64(id))
		l.acceptAt, l.overflow = p.admit(t0)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			return
		}
		p.links[l] = struct{}{}
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			p.addPeer(a.Port)
		}
		p.wg.Add(1)
		// Counted under the lock so a concurrent Close cannot remove the
		// link before it was counted.
		n := p.open.Add(1)
		p.mu.Unlock()
		for {
			peak := p.peakOpen.Load()
			if n <= peak || p.peakOpen.CompareAndSwap(peak, n) {
				break
			}
		}
		go l.run()
		if !p.acceptPause() {
			return
		}
	}
}

// removeLink forgets a link once it has been torn down.
func (p *Proxy) removeLink(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	p.open.Add(-1)
}

// oneWay returns the delay of one chunk in one direction: RTT/2 plus a jitter
// drawn uniformly from [0, Jitter].
func (p *Proxy) oneWay() time.Duration { return p.delays.Next() }
