package server

import (
	"cmp"
	"net"
	"slices"
	"time"
)

// A deregistration is the backend taken out of the load balancer in front of it, as a
// rolling deploy does (ECS, or Kubernetes with the AWS Load Balancer Controller): a new
// target is registered and the old one deregistered. AWS's Application Load Balancer
// "stops sending requests to targets that are deregistering", waits the target group's
// deregistration delay (300 s by default) "before completing the deregistration process,
// which can help in-flight requests to the target to complete", and completes at once "if a
// deregistering target has no in-flight requests and no active connections"; ECS stops the
// old task once deregistration completes. "If a deregistering target terminates the
// connection before the deregistration delay elapses, the client receives a 500-level error
// response." (ELB user guide, Application Load Balancers, "Edit target group attributes",
// Deregistration delay: https://docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-target-group-attributes.html#deregistration-delay)
//
// The embedded server models the new target as a new generation on the same listener,
// which takes every connection from the event on, as a reload's does; the old generation
// is not shut down: its connections stay open and keep serving, with keep-alive, whatever
// the balancer still sends on them (nothing: Config.OnDeregister tells it to stop). Its own
// idle timeout still closes them. Deregistration completes when the delay ends or, earlier,
// when its last connection closes; then the old target is stopped: every connection it
// still has is closed at once (a request in flight on one gets no response), each with the
// close reason ReasonDeregister.

// deregister carries out a deregistration with delay: the old generation keeps its
// connections and a new one serves new connections. ev.mu is held.
func (s *Server) deregister(old *generation, delay time.Duration) {
	if s.cfg.OnDeregister != nil {
		s.cfg.OnDeregister()
	}
	s.startGeneration(s.newHTTPServer())
	old.deregistering.Store(true)
	if delay <= 0 || old.open.Load() == 0 {
		s.stopDeregistered(old)
		return
	}
	s.ev.timers = append(s.ev.timers, time.AfterFunc(delay, func() {
		s.ev.mu.Lock()
		defer s.ev.mu.Unlock()
		s.stopDeregistered(old)
	}))
}

// stopDeregistered completes g's deregistration: the old target stops, and every
// connection it still has closes at once. It runs once; ev.mu is held.
func (s *Server) stopDeregistered(g *generation) {
	if !g.deregistering.CompareAndSwap(true, false) || s.closing.Load() {
		return
	}
	g.reason.Store(ReasonDeregister)
	// Its connections close in accept order, each as one step of the run's order on the
	// virtual clock, so that closes at one instant have their effects in the same order on
	// every run (Server.Close would close them in a map's order); then its handoff listener
	// closes, which ends its Serve. closeEvents closes its http.Server with the others.
	type open struct {
		id int64
		c  net.Conn
	}
	var conns []open
	s.conns.Range(func(k, v any) bool {
		if ci := v.(*connInfo); ci.gen.Load() == g {
			conns = append(conns, open{ci.id, k.(net.Conn)})
		}
		return true
	})
	slices.SortFunc(conns, func(a, b open) int { return cmp.Compare(a.id, b.id) })
	for _, o := range conns {
		closeConn := func() { _ = o.c.Close() } // net/http records the close through ConnState
		if s.cfg.Step != nil {
			s.cfg.Step(closeConn)
		} else {
			closeConn()
		}
	}
	_ = g.ln.Close()
}

// genConnOpened counts a new connection of g (nil without events) and ties it to g.
func (s *Server) genConnOpened(c net.Conn, g *generation) {
	if g == nil {
		return
	}
	g.open.Add(1)
	if v, ok := s.conns.Load(underlying(c)); ok {
		v.(*connInfo).gen.Store(g)
	}
}

// genConnClosed counts a closed connection of g (nil without events); the last one of a deregistering generation
// completes its deregistration at once.
func (s *Server) genConnClosed(g *generation) {
	if g == nil || g.open.Add(-1) > 0 || !g.deregistering.Load() {
		return
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	s.stopDeregistered(g)
}
