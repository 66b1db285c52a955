// Package undiciagent is the bookkeeping of undici 7's Agent for one origin: it counts the
// origin's connected sockets and closes the origin's Pool when that count falls to zero, so
// that a later request starts a new Pool, with new Clients and a new TLS session cache.
// engine/client's creation-order pool uses it when Config.DropEmptyPool is set.
//
// Read in undici 7.30.3 (npm; the same in 7.15.0, where nodejs/undici#4425 made the
// closures look the entry up by key and close rather than destroy the Pool),
// lib/dispatcher/agent.js [kDispatch], lines 90-125:
//
//	const result = this[kClients].get(key)
//	let dispatcher = result && result.dispatcher
//	if (!dispatcher) {
//	  const closeClientIfUnused = (connected) => {
//	    const result = this[kClients].get(key)
//	    if (result) {
//	      if (connected) result.count -= 1
//	      if (result.count <= 0) {
//	        this[kClients].delete(key)
//	        if (!result.dispatcher.destroyed) { result.dispatcher.close() }
//	      } ...
//	  dispatcher = this[kFactory](opts.origin, this[kOptions])
//	    .on('connect', ... result.count += 1 ...)           // this[kClients].get(key)
//	    .on('disconnect', ... closeClientIfUnused(true) ...)
//	    .on('connectionError', ... closeClientIfUnused(false) ...)
//	  this[kClients].set(key, { count: 0, dispatcher })
//
// Three things follow, and the model keeps all three:
//
//   - The closures look the entry up by key when the event comes, not the Pool that
//     emitted it: a socket of a Pool already closed that connects or closes counts
//     against the Pool that replaced it (Connected, Flush on the current Pool).
//   - A Pool's count falls to zero while one of its Clients is still connecting (a
//     request dispatched to a Client whose socket had closed, reconnecting in place: its
//     'connect' comes a round trip later), so the Pool is closed under that request:
//     Pool.close() (pool-base.js [kClose], client.js [kClose]) lets the request finish and
//     then the Client closes its socket itself, after one response.
//   - Each Pool builds its own connector (pool.js constructor: buildConnector({...tls,
//     maxCachedSessions, ...connect}) when connect is not a function, which the Agent's
//     options never make it), and the TLS session cache lives in that connector
//     (lib/core/connect.js buildConnector: const sessionCache = new SessionCache(...)):
//     a new Pool resumes no session of the Pool before it.
//
// A socket's disconnect comes from its 'close' event (client-h1.js onHttpSocketClose:
// client.emit('disconnect', ...)), which Node emits in a later phase of the event loop
// than the read that ended the response: Closing queues it, and Flush applies it when the
// engine/client pool says the event has come (before the next dispatch, or right after a
// dispatch that follows the response straight on). Undici 8 changed the rule
// (nodejs/undici#5034: a Pool is closed only when no Client of it is connected, busy or
// pending); this package models 7.x only.
package undiciagent

import "crypto/tls"

// Pool is one Pool the Agent made for the origin.
type Pool struct {
	count  int // the entry's count: sockets that connected while this Pool was the entry's
	closed bool
	// TLS is the Pool's connector's TLS configuration: its own session cache.
	TLS *tls.Config
}

// Closed says whether the Agent closed the Pool: its Clients finish what they were given
// and then close their sockets.
func (p *Pool) Closed() bool { return p != nil && p.closed }

// Agent is the Agent's entry for one origin: the current Pool, nil when there is none.
type Agent struct {
	cur     *Pool
	pending int         // sockets closing whose 'close' event has not come yet
	tls     *tls.Config // the template each new Pool's TLS configuration is cloned from; nil for plain HTTP
}

// New returns an Agent whose Pools connect with a clone of tc (nil: plain HTTP), each with
// a session cache of its own when tc has one.
func New(tc *tls.Config) *Agent { return &Agent{tls: tc} }

// Dispatch is [kDispatch]: the origin's Pool, and whether it is new (a new Pool has no
// Clients yet).
func (a *Agent) Dispatch() (*Pool, bool) {
	if a.cur != nil {
		return a.cur, false
	}
	p := &Pool{}
	if a.tls != nil {
		p.TLS = a.tls.Clone()
		if a.tls.ClientSessionCache != nil {
			p.TLS.ClientSessionCache = tls.NewLRUClientSessionCache(0)
		}
	}
	a.cur = p
	return p, true
}

// Connected is a socket's 'connect': it counts against the current Pool, if there is one.
func (a *Agent) Connected() {
	if a.cur != nil {
		a.cur.count++
	}
}

// ConnectFailed is a Client's 'connectionError': the current Pool closes when its count is
// zero or less.
func (a *Agent) ConnectFailed() *Pool {
	if a.cur != nil && a.cur.count <= 0 {
		return a.drop()
	}
	return nil
}

// Closing queues the disconnect of a socket that is closing; Flush applies it.
func (a *Agent) Closing() { a.pending++ }

// Flush applies the queued disconnects in turn: each takes one from the current Pool's
// count and closes the Pool when the count is zero or less. It returns the Pools it
// closed (at most one per disconnect; each later disconnect meets no Pool until a request
// makes one).
func (a *Agent) Flush() []*Pool {
	var closed []*Pool
	for ; a.pending > 0; a.pending-- {
		if a.cur == nil {
			continue
		}
		if a.cur.count--; a.cur.count <= 0 {
			closed = append(closed, a.drop())
		}
	}
	return closed
}

func (a *Agent) drop() *Pool {
	p := a.cur
	p.closed = true
	a.cur = nil
	return p
}
