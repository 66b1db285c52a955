package quicnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

// maxDatagram is the largest UDP payload, so that no datagram is ever cut short.
const maxDatagram = 65535

// The PCG streams of the loss draws, one per direction, so that the draws of one
// direction do not depend on how the other direction's datagrams interleave with them.
const (
	lossStreamUp   = 0x6c6f73737570
	lossStreamDown = 0x6c6f7373646e
)

// Stats counts what a relay did. Datagrams the replay model sends or receives are
// counted only in Replays and ReplayAnswers.
type Stats struct {
	Flows   int64 // flows created, one per client address at a time
	Rebinds int64 // of which for a client address whose earlier flow was forgotten
	Expired int64 // flows forgotten after FlowTimeout idle (as of the Stats call)
	// Datagrams and bytes that reached the relay from clients (Up) and from the server
	// (Down), before the flow table and the loss model decided their fate.
	DatagramsUp, DatagramsDown int64
	BytesUp, BytesDown         int64
	LostUp, LostDown           int64 // dropped by the loss model
	DroppedExpired             int64 // dropped, either direction, because their flow was forgotten
	Replays                    int64 // first flights replayed
	ReplayAnswers              int64 // datagrams the server sent to a replay's socket, discarded
}

type counters struct {
	nFlows, nRebinds, nExpired       int64 // under Relay.mu
	dgramsUp, dgramsDown             atomic.Int64
	bytesUp, bytesDown               atomic.Int64
	lostUp, lostDown, droppedExpired atomic.Int64
	replays, replayAnswers           atomic.Int64
}

// Relay is a running datagram link. Its methods are safe for concurrent use.
type Relay struct {
	cfg      Config
	n        Net
	ln       net.PacketConn
	upstream *net.UDPAddr
	local    string // the address its upstream sockets bind
	delays   *stage.Latency

	paceUp, paceDown *stage.Pacer // nil without a bandwidth limit
	lossUp, lossDown *lossModel

	ctx       context.Context
	cancel    context.CancelFunc
	stopWatch func() bool
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	closed    bool
	flows     map[netip.AddrPort]*flow // the live flow of each client address
	forgotten map[netip.AddrPort]bool  // rebind: addresses whose flow was forgotten
	holes     map[netip.AddrPort]bool  // drop: addresses black-holed
	socks     []net.PacketConn         // every upstream socket, for Close

	counters
}

// Start listens on cfg.Listen and relays every client's datagrams to cfg.Upstream and
// the server's answers back, until Close or until ctx ends.
func Start(ctx context.Context, n Net, cfg Config) (*Relay, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	upstream, local, err := cfg.upstreamAddr()
	if err != nil {
		return nil, err
	}
	ln, err := n.ListenPacket(cfg.Listen)
	if err != nil {
		return nil, err
	}
	r := &Relay{
		cfg:       cfg,
		n:         n,
		ln:        ln,
		upstream:  upstream,
		local:     local,
		delays:    stage.NewLatency(cfg.RTT, cfg.Jitter, cfg.Seed),
		lossUp:    newLoss(cfg.Loss, cfg.Seed, lossStreamUp),
		lossDown:  newLoss(cfg.Loss, cfg.Seed, lossStreamDown),
		flows:     make(map[netip.AddrPort]*flow),
		forgotten: make(map[netip.AddrPort]bool),
		holes:     make(map[netip.AddrPort]bool),
	}
	r.paceUp, r.paceDown = stage.Pacers(cfg.Bandwidth, nil, nil)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.stopWatch = context.AfterFunc(ctx, func() { _ = r.Close() })
	r.wg.Add(1)
	go r.readClients()
	return r, nil
}

// Addr is where clients send: the relay's listening address.
func (r *Relay) Addr() net.Addr { return r.ln.LocalAddr() }

// Close stops the relay without delivering what is in flight, closes every socket it
// opened, and returns once every goroutine it started has ended.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		r.stopWatch()
		r.mu.Lock()
		r.sweep(time.Now())
		r.closed = true // no goroutine starts after this
		socks := r.socks
		r.mu.Unlock()
		r.cancel()
		if err := r.ln.Close(); err != nil {
			r.closeErr = fmt.Errorf("quicnet: closing the relay's socket: %w", err)
		}
		for _, s := range socks {
			_ = s.Close()
		}
		r.wg.Wait()
	})
	return r.closeErr
}

// Stats returns the relay's counts. It first forgets the flows that have been idle for
// FlowTimeout by now, so Expired is right even when no datagram came to find them gone;
// after Close it reports the counts as they stood at Close.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	if !r.closed {
		r.sweep(time.Now())
	}
	s := Stats{Flows: r.nFlows, Rebinds: r.nRebinds, Expired: r.nExpired}
	r.mu.Unlock()
	s.DatagramsUp, s.DatagramsDown = r.dgramsUp.Load(), r.dgramsDown.Load()
	s.BytesUp, s.BytesDown = r.bytesUp.Load(), r.bytesDown.Load()
	s.LostUp, s.LostDown = r.lostUp.Load(), r.lostDown.Load()
	s.DroppedExpired = r.droppedExpired.Load()
	s.Replays, s.ReplayAnswers = r.replays.Load(), r.replayAnswers.Load()
	return s
}

// readClients takes every datagram clients send. A read error ends it: on an
// unconnected UDP socket that is Close.
func (r *Relay) readClients() {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := r.ln.ReadFrom(buf)
		if err != nil {
			return
		}
		r.fromClient(append([]byte(nil), buf[:n]...), from)
	}
}

func (r *Relay) fromClient(b []byte, from net.Addr) {
	now := time.Now()
	r.dgramsUp.Add(1)
	r.bytesUp.Add(int64(len(b)))
	ap, err := addrPort(from)
	if err != nil {
		return
	}
	f, err := r.clientFlow(ap, now)
	if errors.Is(err, errForgotten) {
		r.droppedExpired.Add(1)
	}
	if err != nil {
		return
	}
	r.record(f, b, now)
	if r.lossUp.drop() {
		r.lostUp.Add(1)
		return
	}
	f.upLane.push(b, now)
}

// readServer takes what the server sends to one flow's upstream socket.
func (r *Relay) readServer(f *flow) {
	defer r.wg.Done()
	buf := make([]byte, maxDatagram)
	for {
		n, _, err := f.up.ReadFrom(buf)
		if err != nil {
			return
		}
		r.fromServer(f, append([]byte(nil), buf[:n]...))
	}
}

func (r *Relay) fromServer(f *flow, b []byte) {
	now := time.Now()
	r.dgramsDown.Add(1)
	r.bytesDown.Add(int64(len(b)))
	r.mu.Lock()
	alive := r.touch(f, now)
	r.mu.Unlock()
	if !alive {
		r.droppedExpired.Add(1)
		return
	}
	if r.lossDown.drop() {
		r.lostDown.Add(1)
		return
	}
	f.downLane.push(b, now)
}

// lossModel draws which datagrams of one direction are lost.
type lossModel struct {
	p   float64
	mu  sync.Mutex
	rng *rand.Rand
}

func newLoss(p float64, seed int64, stream uint64) *lossModel {
	return &lossModel{p: p, rng: rand.New(rand.NewPCG(uint64(seed), stream))}
}

// drop draws one datagram's fate; without loss it draws nothing.
func (l *lossModel) drop() bool {
	if l.p <= 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng.Float64() < l.p
}
