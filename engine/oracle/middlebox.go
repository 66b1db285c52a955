package oracle

import (
	"fmt"
	"slices"
	"time"
)

// never is an expiry that does not come.
const never = time.Duration(1<<63 - 1)

// middleboxUnmodelled says why the oracle cannot predict a run behind p's middlebox, or ""
// when it can: one request at a time on the client's link, a server that never closes an
// idle connection (the box alone forgets), a box that drops or resets at the next segment,
// a client that does not retry a hang, and no pause within one of the box's polls of its
// expiry (the box notices the timeout at its next poll, an instant the plan does not fix).
func middleboxUnmodelled(p Plan) string {
	m := p.Middlebox
	prefix := fmt.Sprintf("a middlebox (%s) forgets idle flows", m.Name)
	switch {
	case p.Balancer != nil || p.Concurrency > 1:
		return prefix + " on a path the oracle models only for one request at a time and no balancer"
	case p.Server.IdleTimeout > 0:
		return prefix + " while the server also closes idle connections: which comes first is not modelled"
	case !m.Drop && !m.ResetNext:
		return prefix + " and resets both ends at the expiry itself: not modelled"
	case m.Drop && slices.Contains(p.Client.Retry.On, "timeout") && p.Client.Retry.Attempts > 0:
		return prefix + " and the client retries a timeout: not modelled"
	}
	expiry := boxExpiry(p)
	for _, g := range p.Pauses {
		if expiry != never && g >= expiry && g < expiry+m.Poll {
			return fmt.Sprintf("%s after %s, and a pause of %s ends within one of its %s polls of that: which poll notices is not fixed by the plan", prefix, fmtD(expiry), fmtD(g), fmtD(m.Poll))
		}
	}
	return ""
}

// boxExpiry is how long after a burst's last response the box forgets the flow: its idle
// timeout, unless the client's keepalive probes come sooner, in which case the flow lives
// as long as the gaps between probes stay under the timeout.
func boxExpiry(p Plan) time.Duration {
	t, c := p.Middlebox.IdleTimeout, p.Client
	switch {
	case c.KeepaliveIdle <= 0 || c.KeepaliveIdle >= t:
		return t
	case c.KeepaliveInterval > 0 && c.KeepaliveInterval < t:
		return never // every gap between segments is under the timeout
	}
	return c.KeepaliveIdle + t // the first probe refreshes it, the next comes too late
}

// behindBox turns what a burst's first request would meet on its pooled connection into
// what it meets behind the box: a connection the client still trusts, idle past the box's
// expiry, leads into a dropped flow (void) or the box's reset (a failed attempt, as a race).
func (m seqModel) behindBox(o outcome, gap time.Duration) outcome {
	b := m.p.Middlebox
	if b == nil || o != reuse {
		return o
	}
	if e := boxExpiry(m.p); e == never || gap < e+b.Poll {
		return o
	}
	if b.Drop {
		return void
	}
	return race
}

// explainBox is the rule behind a count of a run behind a middlebox, where the box, not a
// server's close, decides; ok is false without a box or when the client's probes keep
// every flow alive.
func (m seqModel) explainBox(metric string) (reason, window string, ok bool) {
	b := m.p.Middlebox
	if b == nil {
		return "", "", false
	}
	e := boxExpiry(m.p)
	if e == never {
		return "", "", false
	}
	window = fmt.Sprintf("a pause of %s or more outlasts the box's memory of the flow (%s, noticed within one %s poll)", fmtD(e+b.Poll), fmtD(e), fmtD(b.Poll))
	fate := "the box drops it, and it hangs until the client's timeout"
	if !b.Drop {
		fate = "the box answers it with a reset"
	}
	switch metric {
	case Errors:
		if !b.Drop && m.clientRetry.retry {
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
	if m.p.Middlebox == nil || lateness <= 0 {
		return out
	}
	for _, g := range []time.Duration{gap - lateness, gap + lateness} {
		if o := m.behindBox(m.front.classify(g), g); !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
