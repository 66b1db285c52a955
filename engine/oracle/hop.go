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

// innerUnmodelled says why the walk cannot follow a chain of balancers, or "". It walks
// the client's hop and the last balancer's backend hop; each link between balancers must
// keep its one connection for the whole run: kept alive, shared by every request
// (reuse always), and never idle long enough for either end's limit, the longest idle
// being the longest pause and every round trip twice, and the first balancer's idle close
// on top when a pause reaches it (the client's request then fails or is re-sent after it).
func innerUnmodelled(p Plan) string {
	b := p.Balancer
	longest := time.Duration(0)
	for _, g := range p.Pauses {
		longest = max(longest, g)
	}
	if b.IdleTimeout > 0 && longest+p.RTT >= b.IdleTimeout {
		longest += b.IdleTimeout
	}
	longest += 2 * (p.RTT + b.via() + b.BackendRTT)
	for _, l := range b.Inner {
		prefix := fmt.Sprintf("a chain of balancers whose link %s -> %s", l.From, l.To)
		switch {
		case !l.KeepAlive:
			return prefix + " opens a connection per request: the walk follows one backend hop"
		case l.Reuse != "" && l.Reuse != "always":
			return fmt.Sprintf("%s shares connections by reuse %q: the walk follows one backend hop", prefix, l.Reuse)
		case l.Keep > 0 && l.Keep <= longest, l.Close > 0 && l.Close <= longest:
			return fmt.Sprintf("%s may close an idle connection (%s's pool %s, %s's idle timeout %s) within the run's longest idle, %s: the walk follows one backend hop, the last balancer's",
				prefix, l.From, limit(l.Keep), l.To, limit(l.Close), longest)
		}
	}
	return ""
}

// innerJitter reports whether a link between balancers jitters.
func innerJitter(p Plan) bool {
	if p.Balancer == nil {
		return false
	}
	for _, l := range p.Balancer.Inner {
		if l.Jitter > 0 {
			return true
		}
	}
	return false
}

func limit(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}
