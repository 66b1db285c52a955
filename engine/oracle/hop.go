package oracle

import (
	"fmt"
	"time"
)

// outcome is what happens to a request that finds a pooled connection after an idle gap.
type outcome int

const (
	reuse outcome = iota // the connection is alive: the request rides it
	fresh                // the pool dropped it (its own idle limit, or the peer's FIN seen): a new connection, no error
	race                 // sent on a connection the far side has closed: the attempt fails
	void                 // sent into a flow a middlebox forgot: nothing comes back until the client's timeout
)

// hop is one pooled link: the side that keeps the pool (a client, a balancer's backend
// pool) and the side that closes idle connections, one round trip apart.
type hop struct {
	rtt   time.Duration
	close time.Duration // the far side's idle close, counted from its last write; 0 never
	keep  time.Duration // the pool's own idle limit from the response's arrival; 0 none
	// liveness: the pool drops a connection whose FIN arrived before it reuses it.
	liveness bool
}

// classify places a gap (from the last response's arrival at the pool to the next
// request's departure) against the hop's edges. The far side wrote that response RTT/2
// before it arrived and closes idle later; its FIN arrives back at gap = close. A request
// sent at gap g lands at g + RTT/2, after the close when g > close − RTT. So:
// g ≥ keep: dropped by the pool; g ≥ close: the FIN is in (dropped with a liveness check,
// else written onto a closed socket); close − RTT < g < close: the stale-connection race.
func (h hop) classify(g time.Duration) outcome {
	switch {
	case h.keep > 0 && g >= h.keep:
		return fresh
	case h.close > 0 && g >= h.close:
		if h.liveness {
			return fresh
		}
		return race
	case h.close > 0 && g > h.close-h.rtt:
		return race
	}
	return reuse
}

// edges are the gaps where classify changes its answer.
func (h hop) edges() []time.Duration {
	var out []time.Duration
	for _, e := range []time.Duration{h.close - h.rtt, h.close, h.keep} {
		if e > 0 {
			out = append(out, e)
		}
	}
	return out
}

// alternatives are the outcomes a gap can have when every timer may be up to lateness
// late in either direction (a late pause lengthens the gap; a late close or a late FIN
// shortens it). The nominal outcome comes first.
func (h hop) alternatives(g, lateness time.Duration) []outcome {
	out := []outcome{h.classify(g)}
	add := func(o outcome) {
		for _, have := range out {
			if have == o {
				return
			}
		}
		out = append(out, o)
	}
	if lateness <= 0 {
		return out
	}
	add(h.classify(g - lateness))
	add(h.classify(g + lateness))
	for _, e := range h.edges() {
		if e >= g-lateness && e <= g+lateness {
			add(h.classify(e))
			add(h.classify(e - 1))
		}
	}
	return out
}

// window describes the gaps that race, or "" when none can.
func (h hop) window(what string) string {
	if h.close <= 0 {
		return ""
	}
	lo, hi := h.close-h.rtt, h.close
	limit := "the close"
	if h.keep > 0 && h.keep < hi {
		hi, limit = h.keep, "the pool's own idle limit"
	}
	if hi <= lo {
		return ""
	}
	return fmt.Sprintf("%s in (%s, %s) races the close: after idle − RTT (%s − %s) the request lands on a closed socket, before %s it is still sent",
		what, fmtD(lo), fmtD(hi), fmtD(h.close), fmtD(h.rtt), limit)
}

// reduceChain turns a plan behind a chain of balancers into the plan of one balancer the
// walk follows, or says why it cannot. The walk follows the client's hop and one backend
// hop; so at most one link of the chain may close a connection within the run, and every
// other link keeps its one connection for the whole run: kept alive, shared by every
// request (reuse always), and never idle as long as either end's limit. A link's longest
// idle is bounded by the longest pause and every round trip of the path twice, and the
// first balancer's idle close on top when a pause reaches it (the client's request then
// fails or is re-sent after it). The link that may close decides (the tightest edge; the
// last link, to the server, when none may): its balancer's pool, policy and error status
// are the walk's balancer, the round trips in front of it are crossed by every request
// (via), and the first balancer's idle timeout stays the client's hop's.
func reduceChain(p Plan) (Plan, string) {
	b := p.Balancer
	if b == nil || len(b.Chain) < 2 || b.real() != "" {
		return p, "" // a real balancer: unmodelled says so
	}
	chain := b.Chain
	longest := chainLongestIdle(p)
	deciding := -1
	for i, t := range chain {
		mayClose, why := linkMayClose(p, i, longest)
		switch {
		case why != "":
			return p, why
		case !mayClose:
			continue
		case deciding >= 0:
			return p, fmt.Sprintf("a chain of balancers in which two links may close a connection within the run's longest idle, %s (%s -> %s and %s -> %s): the walk follows one backend hop",
				longest, chain[deciding].Name, nextName(chain, deciding), t.Name, nextName(chain, i))
		}
		deciding = i
	}
	if deciding < 0 {
		deciding = len(chain) - 1
	}
	r := chain[deciding]
	r.IdleTimeout, r.Chain, r.others = chain[0].IdleTimeout, nil, len(chain)-1
	for _, t := range chain[:deciding] {
		r.viaRTT += t.BackendRTT
	}
	if deciding < len(chain)-1 {
		r.toBalancer, r.nextIdle = true, chain[deciding+1].IdleTimeout
	}
	p.Balancer = &r
	return p, ""
}

// chainLongestIdle bounds how long any link of p's chain can sit idle (reduceChain).
func chainLongestIdle(p Plan) time.Duration {
	chain := p.Balancer.Chain
	longest, trips := time.Duration(0), p.RTT
	for _, g := range p.Pauses {
		longest = max(longest, g)
	}
	for _, t := range chain {
		trips += t.BackendRTT
	}
	if chain[0].IdleTimeout > 0 && longest+p.RTT >= chain[0].IdleTimeout {
		longest += chain[0].IdleTimeout
	}
	return longest + 2*trips
}

// linkMayClose reports whether link i of p's chain (balancer i's pool to the next hop) may
// close a connection within longest of idle, or why the walk cannot follow the link at all.
func linkMayClose(p Plan, i int, longest time.Duration) (bool, string) {
	chain := p.Balancer.Chain
	t, last := chain[i], i == len(chain)-1
	close := p.Server.IdleTimeout
	if !last {
		close = chain[i+1].IdleTimeout
	}
	mayClose := !t.BackendKeepAlive || (t.BackendIdle > 0 && t.BackendIdle <= longest) ||
		(close > 0 && close <= longest) || (last && p.Server.MaxRequests > 0)
	switch {
	case t.BackendJitter > 0:
		return mayClose, "jitter moves each delivery by a random amount the plan does not fix"
	case !mayClose && t.Reuse != "" && t.Reuse != "always":
		return mayClose, fmt.Sprintf("a chain of balancers whose link %s -> %s shares connections by reuse %q: the walk follows one backend hop", t.Name, nextName(chain, i), t.Reuse)
	}
	return mayClose, ""
}

// InnerLinksHold says why the links of p's chain of balancers in front of the last one
// might not keep one connection each for the whole run, or "" when they do (or p has no
// chain): then only the last balancer's link to the server can race, as behind one
// balancer whose requests cross the inner links' round trips too.
func InnerLinksHold(p Plan) string {
	if p.Balancer == nil || len(p.Balancer.Chain) < 2 {
		return ""
	}
	chain := p.Balancer.Chain
	longest := chainLongestIdle(p)
	for i := range chain[:len(chain)-1] {
		mayClose, why := linkMayClose(p, i, longest)
		switch {
		case why != "":
			return why
		case mayClose:
			return fmt.Sprintf("the link %s -> %s may close a connection within the run's longest idle, %s", chain[i].Name, nextName(chain, i), longest)
		}
	}
	return ""
}

// nextName names what link i of a chain dials: the next balancer, or the server.
func nextName(chain []Balancer, i int) string {
	if i+1 < len(chain) {
		return chain[i+1].Name
	}
	return "the server"
}

// backClose is when the walk's backend link is closed from its far end: the next
// balancer's idle timeout, or the server's.
func (b *Balancer) backClose(s Server) time.Duration {
	if b.toBalancer {
		return b.nextIdle
	}
	return s.IdleTimeout
}
