package quicnet

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

// errForgotten: the datagram's flow was forgotten and the table drops what comes after.
var errForgotten = errors.New("flow forgotten")

// flow is one client address and the upstream socket the link gave it.
type flow struct {
	client   netip.AddrPort
	up       net.PacketConn
	upLane   *lane // client to server, out of up
	downLane *lane // server to client, out of the relay's listening socket
	flight   *flight

	// Under Relay.mu.
	last time.Time // the last datagram either way
	gone bool      // forgotten: what reaches up is dropped
}

// clientFlow returns the live flow of a client address, creating one when there is
// none, or errForgotten when the address is black-holed.
func (r *Relay) clientFlow(ap netip.AddrPort, now time.Time) (*flow, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, net.ErrClosed
	}
	if f := r.flows[ap]; f != nil && r.touch(f, now) {
		return f, nil
	}
	if r.holes[ap] {
		return nil, errForgotten
	}
	up, err := r.n.ListenPacket(r.local)
	if err != nil {
		return nil, err
	}
	r.socks = append(r.socks, up)
	f := &flow{client: ap, up: up, last: now}
	caddr := net.UDPAddrFromAddrPort(ap)
	f.upLane = r.newLane(r.paceUp, func(b []byte) { _, _ = up.WriteTo(b, r.upstream) })
	f.downLane = r.newLane(r.paceDown, func(b []byte) { _, _ = r.ln.WriteTo(b, caddr) })
	if r.cfg.ReplayFirstFlight > 0 {
		f.flight = &flight{open: true}
	}
	r.wg.Add(1)
	go r.readServer(f)
	r.flows[ap] = f
	r.nFlows++
	if r.forgotten[ap] {
		delete(r.forgotten, ap)
		r.nRebinds++
	}
	return f, nil
}

// touch refreshes a flow with a datagram that reached the relay at now, or reports that
// it is gone: forgotten before, or idle for FlowTimeout by now. Under r.mu.
func (r *Relay) touch(f *flow, now time.Time) bool {
	if f.gone {
		return false
	}
	if r.idle(f, now) {
		r.forget(f)
		return false
	}
	f.last = now
	return true
}

func (r *Relay) idle(f *flow, now time.Time) bool {
	return r.cfg.FlowTimeout > 0 && !now.Before(f.last.Add(r.cfg.FlowTimeout))
}

// forget drops a flow from the table. Its socket stays open until Close, so that what
// the server still sends to it is counted as dropped rather than vanishing. Under r.mu.
func (r *Relay) forget(f *flow) {
	f.gone = true
	r.nExpired++
	delete(r.flows, f.client)
	if r.cfg.OnExpiry == ExpiryDrop {
		r.holes[f.client] = true
	} else {
		r.forgotten[f.client] = true
	}
}

// sweep forgets every flow idle for FlowTimeout by now. Under r.mu.
func (r *Relay) sweep(now time.Time) {
	for _, f := range r.flows {
		if r.idle(f, now) {
			r.forget(f)
		}
	}
}

// lane is one direction of one flow: datagrams waiting for their release instant, sent
// in the order they arrived by one goroutine.
type lane struct {
	r     *Relay
	pacer *stage.Pacer
	send  func([]byte)
	wake  chan struct{} // a push happened

	mu    sync.Mutex
	floor time.Time // the due instant of the last datagram pushed
	q     []packet
}

type packet struct {
	b   []byte
	due time.Time
}

// newLane starts a lane's sender. Under r.mu, with the relay open.
func (r *Relay) newLane(pacer *stage.Pacer, send func([]byte)) *lane {
	l := &lane{r: r, pacer: pacer, send: send, wake: make(chan struct{}, 1)}
	r.wg.Add(1)
	go l.run()
	return l
}

// push queues a datagram that reached the relay at now. Its due instant is never before
// the one ahead of it, so jitter never reorders a direction of a flow.
func (l *lane) push(b []byte, now time.Time) {
	l.mu.Lock()
	left := now
	if l.pacer != nil {
		left = l.pacer.Send(now, len(b))
	}
	due := l.r.delays.Due(left, l.floor)
	l.floor = due
	l.q = append(l.q, packet{b: b, due: due})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *lane) run() {
	defer l.r.wg.Done()
	done := l.r.ctx.Done()
	for {
		p, ok := l.next(done)
		if !ok || !l.r.cfg.Sleep(p.due, done) {
			return
		}
		l.r.cfg.Lag.AddAt(p.due, time.Since(p.due))
		l.send(p.b)
	}
}

// next waits for the oldest datagram of the lane, or for the relay to close.
func (l *lane) next(done <-chan struct{}) (packet, bool) {
	for {
		l.mu.Lock()
		if len(l.q) > 0 {
			p := l.q[0]
			l.q[0] = packet{}
			l.q = l.q[1:]
			l.mu.Unlock()
			return p, true
		}
		l.mu.Unlock()
		select {
		case <-l.wake:
		case <-done:
			return packet{}, false
		}
	}
}
