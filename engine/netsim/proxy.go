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

	"github.com/kalab-dev/kalab/engine/internal/fault"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/internal/loopback"
)

// Config describes one simulated link. Durations arrive already scaled by the
// runner; netsim applies them as given.
type Config struct {
	// Upstream is the host:port of the server. It must be a loopback address.
	Upstream string
	// RTT is the full round trip; each direction is delayed RTT/2.
	RTT time.Duration
	// Jitter, when positive, adds to each chunk's one-way delay an extra delay
	// drawn uniformly from [0, Jitter]: one-sided, because a path's propagation
	// delay is a floor that queueing only adds to, and a scenario's rtt stays
	// the fastest a round trip can be. A round trip then takes RTT plus the sum
	// of two draws (mean RTT+Jitter, at most RTT+2*Jitter). It never reorders
	// chunks: a chunk is never released before the one that arrived ahead of it.
	Jitter time.Duration
	// Seed seeds the jitter generator so a run can be repeated exactly.
	Seed int64
	// Listen is the address the proxy binds, "127.0.0.1:0" when empty. Any
	// address that is not loopback is rejected.
	Listen string
	// SpinWindow is how long before a chunk is due its wait stops trusting
	// Go timers, which on Linux fire up to about a millisecond late, and
	// is handed to a precise clock shared by every proxy in the process.
	// That clock blocks on a kernel high-resolution timer and yields in a
	// loop only for the last min(SpinWindow, 250 µs); where the kernel
	// offers no timerfd it yields for the whole window. Zero means
	// DefaultSpinWindow; a negative value makes each writer wait on a plain
	// Go timer, trading that precision for a little CPU.
	SpinWindow time.Duration
	// Lag, when set, receives how late each chunk was released against its due time:
	// the link's own measure of whether the machine kept its timing.
	Lag *lag.Recorder
	// OnConn, when set, receives each link's ConnRecord once the link is torn down (by
	// either end or by Close). It is called from the proxy's goroutines, concurrently.
	OnConn func(ConnRecord)
	// AllowRemoteUpstream lets Upstream be an address outside loopback (a user's own
	// server elsewhere). The proxy still listens on loopback only.
	AllowRemoteUpstream bool

	// InitialWindow is the TCP initial congestion window of the slow-start model, in
	// segments of MSS bytes, for both directions; zero means DefaultInitialWindow (10)
	// and a negative value turns slow start off, so every chunk leaves as it arrives.
	// See tcpmodel.go for the model and what it leaves out.
	InitialWindow int
	// NoSlowStartAfterIdle keeps the window of a connection that was idle longer than
	// its RTO, as a host with net.ipv4.tcp_slow_start_after_idle=0 does. By default
	// the window shrinks as Linux's does.
	NoSlowStartAfterIdle bool
	// Bandwidth, when positive, limits each direction to this many bits per second:
	// bytes are serialized one after another and wait while the link is busy.
	Bandwidth int64
	// BandwidthShared makes the limit one bottleneck per direction for all links of the
	// proxy instead of one per link.
	BandwidthShared bool

	// Backlog, when positive, is the listen queue at the proxy's edge: connections
	// the modelled server has not accepted yet. AcceptDelay is how long that server
	// takes per accept (a server too busy to accept). See backlog.go.
	Backlog     int
	AcceptDelay time.Duration
	// RefuseOverflow answers a connection that finds the queue full with a reset, as
	// Linux with net.ipv4.tcp_abort_on_overflow=1; by default its SYN is dropped and
	// the client's kernel retries it (1 s, 3 s, 7 s, ... after the first).
	RefuseOverflow bool

	// quantum overrides quantumFor(RTT) when positive; tests only, to make the
	// coalescing delay large enough to observe.
	quantum time.Duration
}

// DefaultSpinWindow is the SpinWindow used when Config leaves it zero.
const DefaultSpinWindow = 1500 * time.Microsecond

// Stats is a snapshot of a proxy's counters since Start.
type Stats struct {
	// Accepted counts client connections accepted.
	Accepted int64
	// Open is the number of links not yet torn down.
	Open int64
	// PeakOpen is the highest Open seen.
	PeakOpen int64
	// BytesUp counts bytes delivered to the upstream (client -> server).
	BytesUp int64
	// BytesDown counts bytes delivered to clients (server -> client).
	BytesDown int64
	// ResetsUp counts resets delivered to the upstream (client -> server).
	ResetsUp int64
	// ResetsDown counts resets delivered to clients, including refused
	// upstream connections.
	ResetsDown int64
	// Overflows counts connections refused because the modelled listen queue was
	// full (RefuseOverflow). Dropped SYNs never reach the proxy: the client's kernel
	// retries them and the client's connect time shows them.
	Overflows int64
}

// Proxy is a running latency proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg     Config
	quantum time.Duration // the coalescing quantum, quantumFor(cfg.RTT)
	ln      *net.TCPListener
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	delays *oneWayDelays // the one-way delays with their seeded jitter

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

	queue listenQueue // the modelled accept queue (backlog.go); only acceptLoop uses it

	// paceUp and paceDown are the shared bottleneck (BandwidthShared), nil otherwise.
	paceUp, paceDown *pacer

	parker *idleParker // where idle readers wait without a goroutine, nil without one

	closeOnce sync.Once
	closeErr  error
}

// checkModel refuses a model the link cannot run: a negative delay, rate or queue. Both
// links (Start and StartVirtual) check it first.
func (cfg *Config) checkModel() error {
	switch {
	case cfg.RTT < 0:
		return fmt.Errorf("netsim: rtt %v is negative", cfg.RTT)
	case cfg.Bandwidth < 0:
		return fmt.Errorf("netsim: bandwidth %d bit/s is negative", cfg.Bandwidth)
	case cfg.Jitter < 0:
		return fmt.Errorf("netsim: jitter %v is negative", cfg.Jitter)
	case cfg.Backlog < 0 || cfg.AcceptDelay < 0:
		return fmt.Errorf("netsim: backlog %d and accept delay %v must not be negative", cfg.Backlog, cfg.AcceptDelay)
	}
	return nil
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
		ln, err = listenBacklog(laddr, cfg.Backlog)
	} else {
		ln, err = net.ListenTCP("tcp", laddr)
	}
	if err != nil {
		return nil, fmt.Errorf("netsim: listening on %s: %w", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		cfg:     cfg,
		quantum: cmp.Or(cfg.quantum, quantumFor(cfg.RTT)),
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		delays:  newOneWayDelays(&cfg),
		links:   make(map[*link]struct{}),
		queue:   listenQueue{backlog: cfg.Backlog, delay: cfg.AcceptDelay},
	}
	if cfg.Bandwidth > 0 && cfg.BandwidthShared {
		p.paceUp, p.paceDown = &pacer{bps: cfg.Bandwidth}, &pacer{bps: cfg.Bandwidth}
	}
	if p.parker = newIdleParker(); p.parker != nil {
		p.wg.Add(1)
		go p.parker.run(p)
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the host:port clients dial to go through the simulated link.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Handshake waits until a connection whose connect started at start would have its SYN-ACK
// back: one RTT later. A client that calls it after connecting to Addr sees the simulated
// TCP handshake as its connect time; its first bytes then reach the link when the link's
// own model lets them through (1.5 RTT after the connect), so nothing else changes. The
// wait goes through the same precise clock as the link, and its lateness is recorded in
// Config.Lag like a chunk's.
func (p *Proxy) Handshake(ctx context.Context, start time.Time) error {
	due := start.Add(p.cfg.RTT)
	if fault.On(fault.HandshakeShort) {
		due = start // the SYN-ACK back at once: a round trip short, with the floors (newLink)
	}
	if !time.Now().Before(due) {
		// The connect itself took longer than the round trip: the kernel retried a SYN the
		// full listen queue dropped (server.backlog), or the machine stalled. No timer of
		// the model was armed, so there is no lateness of the model's to record; the
		// chunks' timers still record a stall.
		return nil
	}
	var (
		t *time.Timer
		w waiter
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
	return nil
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
		p.parker.close()
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
func (p *Proxy) oneWay() time.Duration { return p.delays.next() }
