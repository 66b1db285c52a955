package oracle

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// never is an expiry that does not come.
const never = time.Duration(1<<63 - 1)

// boxes lists the plan's boxes in path order from the client: its chain, its one box, or
// none.
func (p Plan) boxes() []*Middlebox {
	switch {
	case len(p.Chain) > 0:
		return p.Chain
	case p.Middlebox != nil:
		return []*Middlebox{p.Middlebox}
	}
	return nil
}

// boxNames names the path's boxes: the box's name, or a chain's names joined by arrows.
func (p Plan) boxNames() string {
	var names []string
	for _, b := range p.boxes() {
		names = append(names, b.Name)
	}
	return strings.Join(names, " -> ")
}

// middleboxUnmodelled says why the oracle cannot predict a run behind p's middleboxes, or ""
// when it can: one request at a time on the client's link, a server that never closes an
// idle connection (the boxes alone forget), each box dropping or resetting at the next
// segment, a client that does not retry a hang, no pause within one of a box's polls of
// its expiry (a box notices the timeout at its next poll, an instant the plan does not
// fix), and behind a chain no client TCP keepalive probes (they reach the first box only:
// kalab's boxes relay data, not probes).
func middleboxUnmodelled(p Plan) string {
	prefix := fmt.Sprintf("a middlebox (%s) forgets idle flows", p.boxNames())
	if len(p.Chain) > 1 {
		prefix = fmt.Sprintf("a chain of middleboxes (%s) forgets idle flows", p.boxNames())
	}
	switch {
	case p.Balancer != nil || p.Concurrency > 1:
		return prefix + " on a path the oracle models only for one request at a time and no balancer"
	case p.Server.IdleTimeout > 0:
		return prefix + " while the server also closes idle connections: which comes first is not modelled"
	case len(p.Chain) > 1 && p.Client.KeepaliveIdle > 0:
		return prefix + " and the client sends TCP keepalive probes, which refresh only the first box of the chain: not modelled"
	}
	for _, m := range p.boxes() {
		if why := boxUnmodelled(p, m, prefix); why != "" {
			return why
		}
	}
	return ""
}

// boxUnmodelled is middleboxUnmodelled's verdict on one box of the path.
func boxUnmodelled(p Plan, m *Middlebox, prefix string) string {
	if len(p.Chain) > 1 {
		prefix += ", " + m.Name + " among them,"
	}
	switch {
	case !m.Drop && !m.ResetNext:
		return prefix + " and resets both ends at the expiry itself: not modelled"
	case m.Drop && slices.Contains(p.Client.Retry.On, "timeout") && p.Client.Retry.Attempts > 0:
		return prefix + " and the client retries a timeout: not modelled"
	}
	expiry := boxExpiry(p, m)
	for _, g := range p.Pauses {
		if expiry != never && g >= expiry && g < expiry+m.Poll {
			return fmt.Sprintf("%s after %s, and a pause of %s ends within one of its %s polls of that: which poll notices is not fixed by the plan", prefix, fmtD(expiry), fmtD(g), fmtD(m.Poll))
		}
	}
	return ""
}

// boxExpiry is how long after a burst's last response box b forgets the flow: its idle
// timeout, unless the client's keepalive probes come sooner, in which case the flow lives
// as long as the gaps between probes stay under the timeout (the probes reach a lone box:
// a chain with probes is not modelled).
func boxExpiry(p Plan, b *Middlebox) time.Duration {
	t, c := b.IdleTimeout, p.Client
	switch {
	case c.KeepaliveIdle <= 0 || c.KeepaliveIdle >= t:
		return t
	case c.KeepaliveInterval > 0 && c.KeepaliveInterval < t:
		return never // every gap between segments is under the timeout
	}
	return c.KeepaliveIdle + t // the first probe refreshes it, the next comes too late
}

// forgetter is the box a request sent after gap meets on a forgotten flow: the first box in
// path order that has noticed its expiry (the request's segment crosses the boxes in
// order, and the first that forgot the flow drops it or answers it); nil when none has.
func (p Plan) forgetter(gap time.Duration) *Middlebox {
	for _, b := range p.boxes() {
		if e := boxExpiry(p, b); e != never && gap >= e+b.Poll {
			return b
		}
	}
	return nil
}

// tightest is the box that forgets a flow soonest (the first of equals in path order); nil
// when the probes keep every box's flow alive.
func (p Plan) tightest() *Middlebox {
	var best *Middlebox
	for _, b := range p.boxes() {
		if e := boxExpiry(p, b); e != never && (best == nil || e+b.Poll < boxExpiry(p, best)+best.Poll) {
			best = b
		}
	}
	return best
}

// Boxes lists the plan's boxes in path order from the client: its chain, its one box, or
// none.
func (p Plan) Boxes() []*Middlebox { return p.boxes() }

// Forgetter is the oracle's rule for what a request sent gap after a burst's last response
// meets, for a sweep's geometry to read: the box on a forgotten flow (the first in path
// order that has noticed its expiry) and its place on the path from the client; -1 and nil
// when no box has.
func (p Plan) Forgetter(gap time.Duration) (int, *Middlebox) {
	b := p.forgetter(gap)
	return slices.Index(p.boxes(), b), b
}

// Tightest is the box that forgets a flow soonest (the first of equals in path order) and
// its place; -1 and nil when the client's probes keep every box's flow alive.
func (p Plan) Tightest() (int, *Middlebox) {
	b := p.tightest()
	return slices.Index(p.boxes(), b), b
}

// Expiry is how long after a burst's last response box b forgets the flow (noticed within
// one of its polls after that); false when the client's probes keep the flow alive.
func (p Plan) Expiry(b *Middlebox) (time.Duration, bool) {
	e := boxExpiry(p, b)
	return e, e != never
}

// behindBox turns what a burst's first request would meet on its pooled connection into
// what it meets behind the boxes: a connection the client still trusts, idle past a box's
// expiry, leads into a dropped flow (void) or that box's reset (a failed attempt, as a
// race), by the rule of the first box on the path that forgot it.
func (m seqModel) behindBox(o outcome, gap time.Duration) outcome {
	if o != reuse {
		return o
	}
	b := m.p.forgetter(gap)
	switch {
	case b == nil:
		return o
	case b.Drop:
		return void
	}
	return race
}

// explainBox is the rule behind a count of a run behind middleboxes, where a box, not a
// server's close, decides; ok is false without a box or when the client's probes keep
// every flow alive.
func (m seqModel) explainBox(metric string) (reason, window string, ok bool) {
	b := m.p.tightest()
	if b == nil {
		return "", "", false
	}
	e := boxExpiry(m.p, b)
	memory := "the box's memory of the flow"
	if len(m.p.Chain) > 1 {
		memory = fmt.Sprintf("the memory of %s, the box of the chain that forgets first,", b.Name)
	}
	window = fmt.Sprintf("a pause of %s or more outlasts %s (%s, noticed within one %s poll)", fmtD(e+b.Poll), memory, fmtD(e), fmtD(b.Poll))
	fate := "the box drops it, and it hangs until the client's timeout"
	if !b.Drop {
		fate = "the box answers it with a reset"
	}
	if len(m.p.Chain) > 1 {
		fate = "the first box on the path that forgot the flow drops it (it hangs until the client's timeout) or answers it with a reset, by its on_expiry"
	}
	switch metric {
	case Errors:
		if !slices.ContainsFunc(m.p.boxes(), func(b *Middlebox) bool { return b.Drop }) && m.clientRetry.retry {
			return "every request sent into a forgotten flow is re-sent: " + m.clientRetry.why, window, true
		}
		return "each burst whose pause outlasts the box's memory loses its first request: " + fate, window, true
	case Connections:
		s := "one at the start, one after each request lost to the box"
		if m.front.keep > 0 {
			s += ", one after each pause that outlasts the client's idle limit " + fmtD(m.front.keep)
		}
		return s, window, true
	case ReusedRequests:
		return "requests whose final attempt rode a pooled connection (one sent into a forgotten flow counts: it was sent on one)", window, true
	}
	return "", "", false
}

// boxAlternatives turns a burst's outcomes into those behind the box, adding what a gap up
// to lateness shorter or longer would meet there (the nominal outcome stays first).
func (m seqModel) boxAlternatives(fo []outcome, gap, lateness time.Duration) []outcome {
	out := make([]outcome, 0, len(fo)+2)
	for _, o := range fo {
		out = append(out, m.behindBox(o, gap))
	}
	if len(m.p.boxes()) == 0 || lateness <= 0 {
		return out
	}
	for _, g := range []time.Duration{gap - lateness, gap + lateness} {
		if o := m.behindBox(m.front.classify(g), g); !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
