package client

import (
	"context"
	"time"

	"github.com/kalab-dev/kalab/engine/client/undiciagent"
	"github.com/kalab-dev/kalab/engine/fault"
)

// The creation-order pool is undici's (read in the undici 6.24.1 bundled with Node 20.20.2,
// lib/dispatcher/pool.js, pool-base.js, client.js and client-h1.js):
//
//   - A Pool holds Clients, each with at most one socket (pipelining 1). Pool's
//     kGetDispatcher walks kClients in creation order and takes the first whose kNeedDrain
//     is not set; when none is free it creates a new Client and appends it (pool.js,
//     connections unlimited by default).
//   - A Client whose socket closed (the server's FIN: client-h1.js's 'end' listener
//     destroys the socket with "other side closed"; or its keepAliveTimeout fired) stays in
//     kClients: the socket's 'close' listener only clears kHTTPContext, and a later request
//     dispatched to that Client makes _resume call connect() again (client.js). Only a
//     failed connect removes it (pool.js, its "connectionError" listener).
//   - A Client is marked busy when dispatch returns false (pool-base.js kDispatch), and free
//     again when it emits 'drain'. After a response's last byte, with pipelining 1,
//     onMessageComplete calls setImmediate(() => client[kResume]()) (client-h1.js), so the
//     drain comes one event-loop tick later, after the caller's promise continuations have
//     run: the next request of `for (...) { const r = await fetch(u); await r.arrayBuffer() }`
//     finds the Client busy and goes to the next one (measured: 40 sequential awaited
//     fetches use 2 connections, alternating). A failed request frees its Client at once:
//     the socket's 'close' listener calls kResume synchronously, whose _resume emits the
//     drain directly.
//   - A response after which the socket may not stay (Connection: close, or socket[kReset]
//     set by a hint that leaves nothing to pool) ends in onMessageComplete's
//     util.destroy(socket, new InformationalError("reset")) with no resume (client-h1.js):
//     the Client drains only when that socket's 'close' listener calls kResume, and Node
//     emits 'close' from the handle's close callback (lib/net.js Socket.prototype._destroy,
//     closeSocketHandle), in a later phase of the event loop than the read. The next request
//     of an awaited loop finds this Client busy too and goes to the next one; the request
//     after it finds the Client free and without a socket, and it reconnects in place
//     (measured with a server that closes after N requests: 40 awaited fetches use 8
//     connections at N = 5 and 10 at N = 4, each carrying N requests, alternating between
//     two Clients).
//
// Lines in Node 20.20.2's bundle (lib/internal/deps/undici/undici.js, printed with
// process.binding('natives')): pool-base.js onDrain 865, kDispatch 948; client.js kDispatch
// 7942, emitDrain 8113, _resume 8132; client-h1.js onMessageComplete 6340 (its destroys
// 6371-6377), setImmediate(resume) 6380, the socket's 'end' 6430 and 'close' 6438
// listeners; pool.js 'connectionError' 8268, kGetDispatcher 8277. Node 20.20.2's lib/net.js:
// Socket.prototype._destroy 800, closeSocketHandle 339.
//
// kalab keeps the Clients as slots. The slot of a request whose response arrived whole,
// its connection kept or closed, is held for one dispatch: the request that follows it
// straight on (load.Follows, passed in with Following) skips it; any other request, or a
// caller that yields (Config.CallerYields), finds it free. A failed request's slot is not
// held.

// slot is one undici Client: its place in creation order, and its pooled connection.
type slot struct {
	busy bool
	idle *pconn            // the slot's connection while it is idle; nil when it has none
	pool *undiciagent.Pool // the Pool of undici 7's Agent it belongs to; nil without one
}

type followingKey struct{}

// Following marks ctx as carrying a request that its caller sends straight after its
// previous request returned, without yielding to an event loop in between (an awaited
// loop). Only the creation-order pool reads it: there the connection the previous request
// used is not free yet.
func Following(ctx context.Context) context.Context {
	return context.WithValue(ctx, followingKey{}, true)
}

func following(ctx context.Context) bool {
	v, _ := ctx.Value(followingKey{}).(bool)
	return v
}

// getCreation is get for Scheduling Creation: the first free slot in creation order, its
// idle connection reused when it is still alive, otherwise a new connection dialed in that
// slot; a new slot at the end when none is free. fresh appends a new slot.
func (m *model) getCreation(ctx context.Context, deadline time.Time, ev *Event, fresh, follows bool) (*pconn, bool, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, false, errClosed
	}
	held, heldEnd := m.held, m.heldEnd
	m.held, m.heldEnd = nil, false // the tick passes with this dispatch
	var gone []*pconn
	if !follows {
		gone = m.eventsCome(true) // a pause: every socket's 'end' and 'close' came before it
	}
	defer func() { closeAll(gone) }() // after m.mu is released
	pool := m.dispatchPool()
	s := m.firstFree(fresh, follows, held, heldEnd)
	s = m.liveSlot(s, follows, held)
	if s == nil && m.cfg.MaxConns > 0 && len(m.slots) >= m.cfg.MaxConns {
		// Every client is busy and the pool may not grow: the request waits in the pool's
		// queue and goes to the first client that drains (pool-base.js kOnDrain).
		w := make(chan *pconn, 1)
		m.waiters = append(m.waiters, w)
		m.mu.Unlock()
		return m.await(ctx, deadline, ev, w)
	}
	if s == nil {
		s = &slot{pool: pool}
		m.slots = append(m.slots, s)
	}
	s.busy = true
	if follows {
		// The close events of the sockets the last response closed come now: after this
		// dispatch, before its connect (a round trip away).
		gone = append(gone, m.eventsCome(false)...)
	}
	var dead *pconn
	if c := s.idle; c != nil {
		s.idle = nil
		m.removeIdle(c)
		if (c.expires.IsZero() || time.Now().Before(c.expires)) && (!m.cfg.LivenessCheck || c.alive(m.cfg.LivenessEOFOnly)) {
			m.mu.Unlock()
			return c, true, nil
		}
		dead = c // closed by the server or past its keep-alive timeout: reconnect in place
		// Its FIN or reset came before this dispatch, and so did its 'close' event.
		gone = append(gone, m.disconnect(true)...)
	} else {
		m.open++
	}
	m.mu.Unlock()
	closeAll(gone)
	gone = nil
	if dead != nil {
		_ = dead.nc.Close() // dropping the connection: nothing waits on how its close went
	}
	return m.dialIn(ctx, deadline, ev, s)
}

// firstFree is the first free slot in creation order, nil when none is (or fresh asks for
// a new one). With follows, the slot held by the response just read is not free yet: its
// Client drains one tick later (setImmediate), which a caller that yields lets pass, or,
// when the response closed its socket (heldEnd), on the socket's 'close' event, in the close
// phase, after the caller's setImmediate too. Caller holds m.mu.
func (m *model) firstFree(fresh, follows bool, held *slot, heldEnd bool) *slot {
	for _, x := range m.slots {
		if !x.busy && !fresh && !(follows && x == held && (heldEnd || !m.cfg.CallerYields)) {
			return x
		}
	}
	return nil
}

// liveSlot is first, the slot a request takes, except under the fault
// UndiciNoReconnectInPlace, where a first slot whose connection closed gives way to a
// free slot that still holds an idle connection.
func (m *model) liveSlot(first *slot, follows bool, held *slot) *slot {
	if first == nil || first.idle != nil || !fault.On(fault.UndiciNoReconnectInPlace) {
		return first
	}
	for _, x := range m.slots {
		if !x.busy && x.idle != nil && !(follows && x == held && !m.cfg.CallerYields) {
			return x
		}
	}
	return first
}

// dialIn dials a new connection in slot s, busy and counted in m.open.
func (m *model) dialIn(ctx context.Context, deadline time.Time, ev *Event, s *slot) (*pconn, bool, error) {
	tlsCfg := m.tlsCfg
	if s.pool != nil {
		tlsCfg = s.pool.TLS // the connector of the Client's own Pool (undici 7)
	}
	c, err := m.dial(ctx, deadline, ev, tlsCfg)
	if err != nil {
		m.mu.Lock()
		m.open--
		m.dropSlot(s) // a failed connect removes the Client from the pool (pool.js)
		m.grantSlot()
		var gone []*pconn
		if m.agent != nil {
			gone = m.poolsClosed(nilOr(m.agent.ConnectFailed()))
		}
		m.mu.Unlock()
		closeAll(gone)
		return nil, false, err
	}
	if m.agent != nil {
		m.mu.Lock()
		m.agent.Connected()
		m.mu.Unlock()
	}
	c.slot = s
	return c, false, nil
}

// putCreation is put for Scheduling Creation: the slot comes free; a kept connection stays
// in it, idle (unless MaxIdle connections already idle). Unless the attempt failed, the
// slot is held for the request that follows straight on, whether its connection stays or
// closes. A request waiting for MaxConns takes the slot instead.
func (m *model) putCreation(c *pconn, why string, life time.Duration) {
	m.mu.Lock()
	s := c.slot
	if why == "" && s.pool.Closed() {
		why = ReasonPoolClosed // the Agent closed its Pool: the Client closes after its last request
	}
	keep := why == ""
	if len(m.waiters) > 0 && !m.closed {
		w := m.waiters[0]
		m.waiters = m.waiters[1:]
		if keep {
			c.life = life
			m.mu.Unlock()
			w <- c // reused at once, the slot still busy
			return
		}
		m.closing(c, why)
		gone := m.disconnect(why == ReasonBroken)
		m.mu.Unlock()
		_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
		closeAll(gone)
		w <- &pconn{slot: s} // the waiter dials in this slot; m.open passes to it
		return
	}
	s.busy = false
	if why != ReasonBroken && (keep || !fault.On(fault.UndiciCloseFreesAtOnce)) {
		// The response arrived whole: the Client drains a tick later (setImmediate) or, when
		// its socket closes, with that socket's 'close' event (client-h1.js onMessageComplete).
		m.held, m.heldEnd = s, !keep
	}
	if keep && !m.closed && (m.cfg.MaxIdle == 0 || len(m.idle) < m.cfg.MaxIdle) {
		c.life = life
		m.pool(c, life)
		s.idle = c
		m.mu.Unlock()
		return
	}
	s.idle = nil
	m.open--
	m.closing(c, closeWhy(why, m.closed))
	// A failed request's socket closed before its caller heard of it; a whole response's
	// socket closes in a later phase (eventsCome).
	gone := m.disconnect(why == ReasonBroken)
	m.mu.Unlock()
	_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
	closeAll(gone)
}

// closeWhy is why a connection returned to a full or closed pool is closed: its own
// reason, else the client's end, else a full idle pool.
func closeWhy(why string, closed bool) string {
	switch {
	case why != "":
		return why
	case closed:
		return ReasonEnd
	}
	return ReasonTooManyIdle
}

// removeIdle takes c out of the idle list and stops its timer. Caller holds m.mu.
func (m *model) removeIdle(c *pconn) {
	for i, x := range m.idle {
		if x == c {
			m.idle = append(m.idle[:i], m.idle[i+1:]...)
			break
		}
	}
	c.idle = false
	if c.timer != nil {
		c.timer.Stop()
	}
}

// dropSlot removes s from the creation order. Caller holds m.mu.
func (m *model) dropSlot(s *slot) {
	for i, x := range m.slots {
		if x == s {
			m.slots = append(m.slots[:i], m.slots[i+1:]...)
			return
		}
	}
}
