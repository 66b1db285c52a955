package scenario

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// The server events a file may name (server.events[].do).
const (
	EventGoAway  = "goaway"
	EventDrain   = "drain"
	EventRestart = "restart"
	// EventDeregister takes the server out of the balancer in front of it (a rolling
	// deploy's deregistration); balancer.deregistration_delay says how long it keeps its
	// connections.
	EventDeregister = "deregister"
)

// checkEvents checks server.events: each at a time or after a number of requests, never
// both, with a grace only on a drain and a gap only on a restart, and only on the embedded
// server over TCP; a deregistration only at a time and behind a balancer.
func (l *loader) checkEvents(r *Run, at func(string) *yaml.Node, where string) {
	s := r.Settings.Server
	if len(s.Events) == 0 {
		return
	}
	list := at("server.events")
	item := func(i int) *yaml.Node {
		if list.Kind == yaml.SequenceNode && i < len(list.Content) {
			return list.Content[i]
		}
		return list
	}
	switch {
	case s.Real() && s.Exec != "nginx":
		l.add(list, "server.events", "events apply to kalab's embedded server and to nginx (a reload); this real server (exec, command, url) is reloaded or stopped by its own means%s", where)
		return
	case s.Real():
		l.checkNginxEvents(s.Events, item, where)
	case s.HTTP3():
		l.add(list, "server.events", "events are not modelled over HTTP/3 yet (no GOAWAY from the HTTP/3 server); use server.http \"1.1\" or \"2\"%s", where)
		return
	}
	for i, e := range s.Events {
		n := item(i)
		switch {
		case (e.At > 0) == (e.AfterRequests > 0):
			l.add(n, "server.events", "event %d: give exactly one of at (a time after the start) and after_requests%s", i+1, where)
		case e.Do == EventDeregister:
			l.checkDeregister(r, e, n, i, where)
		case e.Grace > 0 && e.Do != EventDrain:
			l.add(n, "server.events", "event %d: grace is how long a drain waits for open connections; %s has none%s", i+1, e.Do, where)
		case e.Gap > 0 && e.Do != EventRestart:
			l.add(n, "server.events", "event %d: gap is how long a restart serves nothing; %s has none%s", i+1, e.Do, where)
		}
	}
}

// checkDeregister checks event i, a deregistration: behind a balancer, at a time, with
// the balancer's deregistration_delay rather than a grace or a gap of its own.
func (l *loader) checkDeregister(r *Run, e ServerEvent, n *yaml.Node, i int, where string) {
	switch {
	case r.Settings.Balancer == nil:
		l.add(n, "server.events", "event %d: deregister takes the server out of the balancer in front of it, and this run has no balancer: add a balancer section (its deregistration_delay is how long the old target keeps its connections)%s", i+1, where)
	case e.AfterRequests > 0:
		l.add(n, "server.events", "event %d: a deregistration happens at a time: use at, not after_requests%s", i+1, where)
	case e.Grace > 0 || e.Gap > 0:
		l.add(n, "server.events", "event %d: a deregistration waits the balancer's deregistration_delay, not a grace or a gap of its own: set balancer.deregistration_delay%s", i+1, where)
	}
}

// checkNginxEvents checks nginx's events: a reload (nginx -s reload) or a drain (nginx -s
// quit) at a time; a drain has no grace (nginx's worker_shutdown_timeout is its
// configuration's, not the signal's) and, since nginx exits after it, no event follows it.
func (l *loader) checkNginxEvents(events []ServerEvent, item func(int) *yaml.Node, where string) {
	var drainAt time.Duration = -1
	for _, e := range events {
		if e.Do == EventDrain && e.AfterRequests == 0 && (drainAt < 0 || e.At.D() < drainAt) {
			drainAt = e.At.D()
		}
	}
	for i, e := range events {
		switch {
		case (e.Do != EventGoAway && e.Do != EventDrain) || e.AfterRequests > 0:
			l.add(item(i), "server.events", "event %d: nginx takes a reload or a drain at a time (do: goaway or drain, at: ...), which kalab gives it as nginx -s reload or nginx -s quit; not %s%s", i+1, eventWhen(e), where)
		case e.Do == EventDrain && e.Grace > 0:
			l.add(item(i), "server.events", "event %d: nginx -s quit has no grace of its own (nginx's worker_shutdown_timeout is its configuration's): remove grace%s", i+1, where)
		case drainAt >= 0 && e.At.D() > drainAt:
			l.add(item(i), "server.events", "event %d: nginx exits after the drain at %v (nginx -s quit): no event can follow it%s", i+1, drainAt, where)
		}
	}
}

// modelH2 reports whether r is a model client speaking HTTP/2 to the embedded server.
func modelH2(r *Run) bool {
	s, c := r.Settings.Server, r.Settings.Client
	return s.HTTP == "2" && c.Exec == nil && !s.Real() && c.HTTP2 != "never" && (c.HTTP2 != "tls" || s.TLS)
}

// checkGoAwayClient refuses client.http2_goaway where no HTTP/2 GOAWAY can reach the client.
func (l *loader) checkGoAwayClient(r *Run, at func(string) *yaml.Node, where string) {
	if r.Settings.Client.HTTP2GoAway != "" && !modelH2(r) {
		l.add(at("client.http2_goaway"), "client.http2_goaway", "it decides what a model client does with an HTTP/2 GOAWAY; this run is not a model client speaking HTTP/2 to the embedded server%s", where)
	}
}

// eventWhen names an event as a file writes it.
func eventWhen(e ServerEvent) string {
	if e.AfterRequests > 0 {
		return fmt.Sprintf("%s after_requests %d", e.Do, e.AfterRequests)
	}
	return e.Do
}
