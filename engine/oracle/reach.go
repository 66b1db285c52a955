package oracle

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reach answers a question Predict does not: which whole-run outcomes (errors,
// connections, the bursts that failed) can a plan end in when the program that runs it is
// slower than the plan's round trips, by amounts measured on a run? A pool's idle gap is a
// sum of the pause and the requests other connections carried since its last response;
// a program that begins each request a little after the response before it, or whose
// responses reach it a little after their bytes, lengthens every gap by its own time, and
// a gap the plan put a few milliseconds from a race edge can cross it. Once one request's
// outcome changes, the pool is in another state (which client reconnects, when its
// response arrives) and the bursts after it follow another path, so the walk branches at
// every request whose gap could lie on either side of an edge and follows every branch to
// the run's end. A gap's range is exact interval arithmetic: each connection's idle time
// so far is an interval, every step adds the plan's duration to both ends and the run's
// measured slack at that request to the upper end, and a request restarts its own
// connection's at zero, or at its slack: a program may read a response's bytes late, and
// the server's idle clock started when it wrote them. Nothing is a fixed band: a gap
// further from every edge than the slack the run showed has one outcome.

// Slack is how much longer than the plan a run took around each request, in scenario
// time, by the request's sequence number: Before[n] from the response before request n
// (or, for a burst's first request, from the end of the pause) to its start, below zero
// when a pause ended early; During[n] beyond the round trips the plan gives it. Margin
// widens every gap's range both ways: what the clocks cannot tell apart, or the lateness
// of timers whose effect on each request the run did not judge.
type Slack struct {
	Before, During []time.Duration
	Margin         time.Duration
}

// before is Before[n]; it may be negative: a program's pause timer can fire a fraction
// of a millisecond early (Node's timers count whole milliseconds).
func (s Slack) before(n int) time.Duration {
	if n < len(s.Before) {
		return s.Before[n]
	}
	return 0
}

func (s Slack) during(n int) time.Duration {
	if n < len(s.During) {
		return max(s.During[n], 0)
	}
	return 0
}

// Outcome is one way a whole run can end.
type Outcome struct {
	Errors, Connections int
	// FailedBursts has bit b set when burst b had a failed request (the first 53 bursts,
	// as the failed_bursts_mask metric).
	FailedBursts uint64
}

// maskBursts is how many bursts FailedBursts records (exact in a float64).
const maskBursts = 53

// reachBudget bounds the distinct pool states the walk follows at once.
const reachBudget = 4096

// ErrTooManyWays is Reach's answer when the slack leaves more ways for the run to go than
// its budget: the run was too slow around too many edges to be weighed.
var ErrTooManyWays = errors.New("the run's slack leaves too many ways for it to go")

// Reach lists every outcome the plan reaches at the run's slack, sorted, without
// duplicates; with no slack it is the plan's one nominal outcome. It follows an awaited
// loop (one request in flight) over undici's creation-order pool, or over a pool that
// hands the connection just returned to the next request; an error says why a plan is
// not one of those.
func Reach(p Plan, s Slack) ([]Outcome, error) {
	if why := reachUnmodelled(p); why != "" {
		return nil, errors.New(why)
	}
	if noReuse, _ := neverReuses(p.Client, p.Server); noReuse {
		return []Outcome{{Connections: p.Requests}}, nil
	}
	m := reachModel{p: p, s: s, serve: p.RTT + p.Server.Delay, creation: p.Client.AwaitedCreationOrder,
		h: hop{rtt: p.RTT, close: p.Server.IdleTimeout, keep: clientKeep(p.Client, p.Server), liveness: p.Client.LivenessCheck}}
	burst := p.Burst
	if burst <= 0 || burst > p.Requests {
		burst = p.Requests
	}
	states := []reachState{{held: -1}}
	for n := 0; n < p.Requests; n++ {
		b, k := n/burst, n%burst
		if k == 0 && b > 0 && b-1 < len(p.Pauses) {
			for i := range states {
				states[i].advance(p.Pauses[b-1], p.Pauses[b-1])
			}
		}
		var next []reachState
		seen := map[string]bool{}
		for _, st := range states {
			late := s.before(n)
			st.advance(min(late, 0), max(late, 0))
			for _, o := range m.step(st, n, b, k > 0) {
				if key := o.key(); !seen[key] {
					seen[key] = true
					next = append(next, o)
				}
			}
		}
		if len(next) > reachBudget {
			return nil, fmt.Errorf("%w (more than %d by request %d)", ErrTooManyWays, reachBudget, n)
		}
		states = next
	}
	return outcomesOf(states), nil
}

// reachUnmodelled says why Reach cannot follow a plan, or "".
func reachUnmodelled(p Plan) string {
	if why := unpredictable(p); why != "" {
		return why
	}
	rule, why := clientRetry(p.Client)
	switch {
	case p.HTTP3:
		return "HTTP/3: the walk follows TCP pools"
	case p.Concurrency > 1:
		return fmt.Sprintf("%d requests in flight: the walk follows an awaited loop, one at a time", p.Concurrency)
	case p.Balancer != nil:
		return "a balancer: the walk follows one hop"
	case why != "" || rule.retry:
		return "a client retry: where the re-sent attempt goes is not followed"
	case p.Client.MaxConns == 1 && p.Client.AwaitedCreationOrder:
		return "undici's pool with max_conns 1: the request after a response waits in the pool's queue, which the walk does not follow"
	case p.Client.MaxIdle == 1 && p.Client.AwaitedCreationOrder:
		return "undici's pool with max_idle 1: which connection is closed on return is not followed"
	case p.Bandwidth > 0 || p.Server.BodyBytes+p.Client.BodyBytes+headerBytes > initialWindow(p)*mss:
		return "bodies or a bandwidth limit that take more than one round trip: the walk counts round trips"
	case p.Server.TLS != "" && p.Server.TLS != "1.2" && p.Server.TLS != "1.3":
		return fmt.Sprintf("TLS %s: its handshake's round trips are not modelled", p.Server.TLS)
	}
	return ""
}

// reachSlot is one client of the pool: whether it holds a connection, the interval its
// connection has been idle (since its last response arrived), and how many requests the
// connection carried.
type reachSlot struct {
	conn    bool
	lo, hi  time.Duration
	carried int
}

// reachState is the pool between two requests on one path, with that path's counts.
type reachState struct {
	slots  []reachSlot
	held   int // the client held for the request that follows straight on; -1 none
	ticket bool
	out    Outcome
}

// advance lets time pass: at least lo, at most hi, for every idle connection.
func (st *reachState) advance(lo, hi time.Duration) {
	for i := range st.slots {
		st.slots[i].lo += lo
		st.slots[i].hi += hi
	}
}

func (st reachState) clone() reachState {
	st.slots = slices.Clone(st.slots)
	return st
}

func (st reachState) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %t %d %d %d|", st.held, st.ticket, st.out.Errors, st.out.Connections, st.out.FailedBursts)
	for _, s := range st.slots {
		fmt.Fprintf(&b, "%t %d %d %d;", s.conn, s.lo, s.hi, s.carried)
	}
	return b.String()
}

type reachModel struct {
	p        Plan
	s        Slack
	h        hop
	serve    time.Duration
	creation bool
}

// pick is the client request n goes to: undici's first free client in creation order,
// skipping the one held for a request that follows straight on (creationModel.pick), or
// for any other awaited loop the connection just returned, kept as client 0.
func (m reachModel) pick(st *reachState, follows bool) int {
	held := st.held
	st.held = -1
	if !m.creation {
		if len(st.slots) == 0 {
			st.slots = append(st.slots, reachSlot{})
		}
		return 0
	}
	for i := range st.slots {
		if !follows || i != held {
			return i
		}
	}
	st.slots = append(st.slots, reachSlot{})
	return len(st.slots) - 1
}

// step plays request n (of burst b) on every outcome its gap can have.
func (m reachModel) step(st reachState, n, b int, follows bool) []reachState {
	st = st.clone()
	i := m.pick(&st, follows)
	s := st.slots[i]
	outs := []outcome{fresh}
	if s.conn {
		// The request's own slack lengthens its gap too: its bytes leave after its start.
		outs = m.h.across(s.lo-m.s.Margin, s.hi+m.s.during(n)+m.s.Margin)
	}
	var res []reachState
	for _, o := range outs {
		res = append(res, m.play(st.clone(), n, b, i, o))
	}
	return res
}

// play sends request n on client i, which meets o (creationModel.play, on intervals).
func (m reachModel) play(st reachState, n, b, i int, o outcome) reachState {
	s := &st.slots[i]
	d := m.s.during(n)
	switch o {
	case race:
		// The attempt fails when the server's FIN arrives, close − gap after it left;
		// its client is free at once and holds no connection.
		st.out.Errors++
		if b < maskBursts {
			st.out.FailedBursts |= 1 << b
		}
		lo, hi := max(m.h.close-s.hi, 0), max(m.h.close-s.lo, 0)
		s.conn = false
		st.advance(lo, hi+d)
		return st
	case reuse:
		s.carried++
		st.advance(m.serve, m.serve+d)
	default:
		st.out.Connections++
		s.carried = 1
		t := m.handshake(st.ticket) + m.serve
		st.advance(t, t+d)
		if m.p.Server.TLS != "" && m.p.Client.SessionResumption && m.p.Server.SessionTickets {
			st.ticket = true
		}
	}
	// The response's bytes may have come up to d before the program read them: the
	// server's idle clock, which the gap races, started then.
	s.lo, s.hi = 0, d
	s.conn = m.p.Client.KeepAlive && (m.p.Server.MaxRequests == 0 || s.carried < m.p.Server.MaxRequests)
	st.held = i
	return st
}

// handshake is creationModel.handshake: the connect's round trip and TLS's.
func (m reachModel) handshake(ticket bool) time.Duration {
	return creationModel{p: m.p}.handshake(creationState{ticket: ticket})
}

// across lists the outcomes of every gap in [lo, hi], the outcome at lo first.
func (h hop) across(lo, hi time.Duration) []outcome {
	out := []outcome{h.classify(lo)}
	add := func(o outcome) {
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	for _, e := range h.edges() {
		if e > lo && e <= hi {
			add(h.classify(e - 1))
			add(h.classify(e))
		}
	}
	add(h.classify(hi))
	return out
}

// outcomesOf collects the distinct outcomes of the paths, sorted.
func outcomesOf(states []reachState) []Outcome {
	var out []Outcome
	for _, st := range states {
		if !slices.Contains(out, st.out) {
			out = append(out, st.out)
		}
	}
	slices.SortFunc(out, func(a, b Outcome) int {
		if a.Errors != b.Errors {
			return a.Errors - b.Errors
		}
		if a.Connections != b.Connections {
			return a.Connections - b.Connections
		}
		return cmp.Compare(a.FailedBursts, b.FailedBursts)
	})
	return out
}
