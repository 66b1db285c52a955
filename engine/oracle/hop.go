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
