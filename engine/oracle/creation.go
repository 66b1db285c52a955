package oracle

import (
	"fmt"
	"time"
)

// The awaited creation-order walk follows undici's Pool as engine/client models it
// (creation.go there): a request goes to the first client in creation order that is free;
// the client whose response just arrived whole (its connection kept, or closed by
// Connection: close) is still busy for the request that follows it straight on, so the
// requests of a burst alternate between two clients and a burst's first request, which
// starts when the pause ends, goes to the first. A failed request frees its client at once.
// A client whose connection is gone (the server's FIN seen, max_requests, the pool's own
// idle limit, a failure) keeps its place and reconnects there when a request reaches it.
// Each client's idle gap is therefore the pause plus the time since its own last response,
// which the walk follows on a clock of round trips, server delays and handshakes.

// mss is the segment size of the simulated links (engine/netsim MSS), and headerBytes a
// generous bound on a request's and a response's head together.
const (
	mss         = 1448
	headerBytes = 1024
)

// initialWindow is the link's initial congestion window in segments (engine/netsim's
// default 10 when the plan leaves it 0).
func initialWindow(p Plan) int {
	if p.InitialWindow <= 0 {
		return 10
	}
	return p.InitialWindow
}

// creationSlot is one undici Client: whether it holds a pooled connection, when that
// connection's last response arrived (scenario time from the run's start), and how many
// requests it has carried.
type creationSlot struct {
	conn    bool
	arrived time.Duration
	carried int
}

// creationState is the pool between two requests of an awaited loop.
type creationState struct {
	slots []creationSlot
	held  int           // the client held for the request that follows straight on; -1 none
	now   time.Duration // when the next request leaves
	// ticket: the client has a TLS session to resume.
	ticket bool
}

func (s creationState) clone() creationState {
	s.slots = append([]creationSlot(nil), s.slots...)
	return s
}

// creationModel walks an awaited loop over undici's creation-order pool, one request in
// flight.
type creationModel struct {
	p     Plan
	h     hop
	serve time.Duration // a request on an open connection: one round trip and the server's delay
	retry retryRule
}

// awaited predicts an awaited loop over undici's creation-order pool.
func awaited(p Plan, lateness time.Duration) Prediction {
	names := singleHop
	if p.Balancer != nil {
		names = twoHop
	}
	if why := awaitedUnmodelled(p); why != "" {
		return notPredicted(names, why, lateness)
	}
	rule, _ := clientRetry(p.Client)
	m := creationModel{p: p, serve: p.RTT + p.Server.Delay, retry: rule,
		h: hop{rtt: p.RTT, close: p.Server.IdleTimeout, keep: clientKeep(p.Client, p.Server), liveness: p.Client.LivenessCheck}}
	return m.predict(lateness)
}

// awaitedUnmodelled says why the walk cannot give an awaited creation-order run's counts
// exactly, or "".
func awaitedUnmodelled(p Plan) string {
	const pool = "undici's creation-order pool with an awaited loop"
	rule, why := clientRetry(p.Client)
	switch {
	case p.Concurrency > 1:
		return fmt.Sprintf("%s and %d requests in flight: which client each request finds free depends on the order responses arrive", pool, p.Concurrency)
	case p.Balancer != nil:
		return pool + " behind a balancer: the walk follows one hop"
	case p.Middlebox != nil:
		return pool + " through a middlebox: the walk does not follow a box's expiry"
	case why != "" || rule.retry:
		return pool + " and a client retry: where the re-sent attempt goes in the pool is not modelled"
	case p.Client.MaxConns == 1:
		return pool + " and max_conns 1: the request after a response waits in the pool's queue for a client, which the walk does not follow"
	case p.Client.MaxIdle == 1:
		return pool + " and max_idle 1: which of the two clients' connections is closed on return depends on the idle list, which the walk does not follow"
	case p.Bandwidth > 0:
		return pool + " over a bandwidth limit: each client's idle gap includes the other's requests, whose time on the wire the walk does not follow"
	case p.Server.BodyBytes+p.Client.BodyBytes+headerBytes > initialWindow(p)*mss:
		return pool + " with bodies beyond one initial window: each client's idle gap includes the other's requests, whose slow-start rounds the walk does not follow"
	case p.Server.TLS != "" && p.Server.TLS != "1.2" && p.Server.TLS != "1.3":
		return fmt.Sprintf("%s over TLS %s: its handshake's round trips are not modelled", pool, p.Server.TLS)
	}
	return ""
}

// handshake is how long a new connection takes before its request leaves: the TCP
// connect's round trip, TLS 1.3's one more, TLS 1.2's two (one when it resumes a session).
func (m creationModel) handshake(st creationState) time.Duration {
	n := 1
	switch m.p.Server.TLS {
	case "1.3":
		n++
	case "1.2":
		n += 2
		if st.ticket {
			n--
		}
	}
	return time.Duration(n) * m.p.RTT
}

// pick takes the client the next request goes to: the first in creation order, skipping
// the one held for a request that follows straight on; a new client at the end when none
// is free. The hold passes with this dispatch.
func (m creationModel) pick(st *creationState, follows bool) int {
	held := st.held
	st.held = -1
	for i := range st.slots {
		if !follows || i != held {
			return i
		}
	}
	st.slots = append(st.slots, creationSlot{})
	return len(st.slots) - 1
}

// outcomes are what the next request can meet on client i: a new connection when it has
// none, else its idle gap placed against the hop's edges (the nominal outcome first).
func (m creationModel) outcomes(st creationState, i int, lateness time.Duration) []outcome {
	s := st.slots[i]
	if !s.conn {
		return []outcome{fresh}
	}
	return m.h.alternatives(st.now-s.arrived, lateness)
}

// play sends request seq on client i, which meets o.
func (m creationModel) play(st creationState, seq, i int, o outcome, t tally) creationState {
	s := &st.slots[i]
	if !s.conn {
		o = fresh
	}
	switch o {
	case race:
		// Sent on a connection the server has closed: the attempt fails when the server's
		// FIN arrives (at once when it is already in), and frees its client at once.
		t.add(Errors, seq)
		t.add(ReusedRequests, seq)
		st.now = max(st.now, s.arrived+m.h.close)
		s.conn = false
		return st
	case reuse:
		t.add(ReusedRequests, seq)
		s.carried++
		st.now += m.serve
	default:
		t.add(Connections, seq)
		s.carried = 1
		st.now += m.handshake(st) + m.serve
		if m.p.Server.TLS != "" && m.p.Client.SessionResumption && m.p.Server.SessionTickets {
			st.ticket = true
		}
	}
	s.arrived = st.now
	s.conn = m.p.Client.KeepAlive && (m.p.Server.MaxRequests == 0 || s.carried < m.p.Server.MaxRequests)
	st.held = i
	return st
}

// walk plays requests from..size-1 of the burst that starts at request start, branching
// where a gap lies within lateness of an edge, and calls leaf with each way the burst can
// end; false when the branches outgrow budget.
func (m creationModel) walk(st creationState, start, from, size int, t tally, lateness time.Duration, budget *int, leaf func(creationState, tally)) bool {
	for k := from; k < size; k++ {
		i := m.pick(&st, k > 0)
		alts := m.outcomes(st, i, lateness)
		for _, o := range alts[1:] {
			if *budget--; *budget < 0 {
				return false
			}
			bt := t.clone()
			if !m.walk(m.play(st.clone(), start+k, i, o, bt), start, k+1, size, bt, lateness, budget, leaf) {
				return false
			}
		}
		st = m.play(st, start+k, i, alts[0], t)
	}
	leaf(st, t)
	return true
}

// walkBudget bounds the ways one burst may branch at the run's lateness.
const walkBudget = 4096

func (m creationModel) predict(lateness time.Duration) Prediction {
	burst := m.p.Burst
	if burst <= 0 || burst > m.p.Requests {
		burst = m.p.Requests
	}
	lo, hi, nominal := newTally(), newTally(), newTally()
	uncertain := map[string][]int{}
	st := creationState{held: -1}
	for start, b := 0, 0; start < m.p.Requests; start, b = start+burst, b+1 {
		size := min(burst, m.p.Requests-start)
		if b > 0 && b-1 < len(m.p.Pauses) {
			st.now += m.p.Pauses[b-1]
		}
		var next creationState
		t := newTally()
		budget := 0
		m.walk(st.clone(), start, 0, size, t, 0, &budget, func(s creationState, _ tally) { next = s })
		least, most := t, t
		budget = walkBudget
		if lateness > 0 && !m.walk(st.clone(), start, 0, size, newTally(), lateness, &budget, func(_ creationState, alt tally) {
			least, most = minTally(least, alt), maxTally(most, alt)
		}) {
			return notPredicted(singleHop, fmt.Sprintf("more than %d ways a burst of undici's creation-order pool can go within the run's lateness (%s) of the window edges", walkBudget, fmtD(lateness)), lateness)
		}
		for _, k := range singleHop {
			if least.n[k] != most.n[k] {
				uncertain[k] = append(uncertain[k], start)
			}
		}
		merge(nominal, t)
		merge(lo, least)
		merge(hi, most)
		st = next
	}
	return m.result(nominal, lo, hi, uncertain, lateness)
}

func (t tally) clone() tally {
	out := newTally()
	for k, v := range t.n {
		out.n[k] = v
	}
	for k, v := range t.seqs {
		out.seqs[k] = append([]int(nil), v...)
	}
	return out
}

func (m creationModel) result(nominal, lo, hi tally, uncertain map[string][]int, lateness time.Duration) Prediction {
	return walked("creation-order", singleHop, nominal, lo, hi, uncertain, lateness, m.explain)
}

// explain is the rule behind an awaited creation-order count and the window it depends on.
func (m creationModel) explain(metric string) (reason, window string) {
	win := m.h.window("a client's idle gap (the pause, plus the requests since its own last response)")
	switch metric {
	case Errors:
		return "each client whose idle gap races the server's close loses the request it is sent: " + m.retry.why, win
	case Connections:
		s := "one per client of the pool: an awaited loop keeps two (the client whose response just arrived is busy for the request after it), each reconnecting in place"
		if m.h.close > 0 || m.h.keep > 0 {
			s += " after an idle gap that outlasts the pool's limit (" + limitText(m.h, "the server's") + ") and after a race"
		}
		if m.p.Server.MaxRequests > 0 {
			s += fmt.Sprintf(", and after every %d requests it carried (server.max_requests)", m.p.Server.MaxRequests)
		}
		return s, win
	case ReusedRequests:
		return "requests whose attempt rode a client's pooled connection (a failed race counts: it was sent on one)", win
	}
	return "nothing re-sends: " + m.retry.why, ""
}
