package client

import (
	"slices"

	"github.com/kalab-dev/kalab/engine/client/undiciagent"
)

// Config.DropEmptyPool: the creation-order pool under undici 7's Agent, which closes the
// origin's Pool when its count of connected sockets falls to zero and starts a new one
// for the next request (engine/client/undiciagent says where in undici's source). The
// model keeps the Agent's entry in m.agent and each Client's Pool in its slot; m.slots
// are the current Pool's Clients.

// dispatchPool is the Pool a request is dispatched to: the current one, or a new one with
// no Clients yet. nil without the Agent. Caller holds m.mu.
func (m *model) dispatchPool() *undiciagent.Pool {
	if m.agent == nil {
		return nil
	}
	p, fresh := m.agent.Dispatch()
	if fresh {
		m.slots = nil
	}
	return p
}

// eventsCome delivers the socket events that came before a dispatch: with sweep (after a
// pause), the FIN on each idle socket of the current Pool ('end' destroys it and its
// 'close' follows), then every queued disconnect. It returns the connections to close once
// m.mu is released. Caller holds m.mu.
func (m *model) eventsCome(sweep bool) []*pconn {
	if m.agent == nil {
		return nil
	}
	var gone []*pconn
	for _, s := range m.slots {
		if c := s.idle; sweep && c != nil && m.cfg.LivenessCheck && !c.alive(m.cfg.LivenessEOFOnly) {
			s.idle = nil
			m.removeIdle(c)
			m.open--
			gone = append(gone, c)
			m.agent.Closing()
		}
	}
	return append(gone, m.poolsClosed(m.agent.Flush())...)
}

// disconnect queues the disconnect of a socket the client is closing, and with now
// delivers it at once. It returns the connections to close once m.mu is released. Caller
// holds m.mu.
func (m *model) disconnect(now bool) []*pconn {
	if m.agent == nil {
		return nil
	}
	m.agent.Closing()
	if now {
		return m.eventsCome(false)
	}
	return nil
}

// poolsClosed carries out the Agent's Pool.close() of each of ps: an idle Client closes its
// socket now (its disconnect queued), a busy one after its response (putCreation), and the
// next request goes to a new Pool. It returns the connections to close once m.mu is
// released. Caller holds m.mu.
func (m *model) poolsClosed(ps []*undiciagent.Pool) []*pconn {
	var gone []*pconn
	for _, p := range ps {
		for _, s := range m.slots {
			if c := s.idle; s.pool == p && c != nil {
				s.idle = nil
				m.removeIdle(c)
				m.open--
				m.closing(c, ReasonPoolClosed)
				gone = append(gone, c)
				m.agent.Closing()
			}
		}
		m.slots = slices.DeleteFunc(m.slots, func(s *slot) bool { return s.pool == p })
	}
	return gone
}

// nilOr is p as a list: none when p is nil.
func nilOr(p *undiciagent.Pool) []*undiciagent.Pool {
	if p == nil {
		return nil
	}
	return []*undiciagent.Pool{p}
}

// closeAll closes cs, outside m.mu.
func closeAll(cs []*pconn) {
	for _, c := range cs {
		_ = c.nc.Close() // dropping the connection: nothing waits on how its close went
	}
}
