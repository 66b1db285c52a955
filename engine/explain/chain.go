package explain

import (
	"fmt"
	"strings"
)

// chainStory explains a request a chain of balancers answered with an error status or
// re-sent. The request records hold what the first balancer saw of its own backend hop,
// not which balancer answered; the run's hops hold each balancer's own counts, so the
// story names the balancer that answered only when one alone made answers (or re-sends)
// of its own in the run.
func (r *Run) chainStory(i int) string {
	q := r.Requests[i]
	var b strings.Builder
	path := r.chainNames()
	metric, did := "balancer_errors", "answered"
	if q.Status >= 500 {
		fmt.Fprintf(&b, "Request %d, sent at %s on client connection %d, was answered %d after %s; the client saw a response, not an error.",
			q.Seq, ms(q.StartMs), q.Conn, q.Status, ms(q.LatencyMs))
	} else {
		metric, did = "balancer_retries", "re-sent"
		fmt.Fprintf(&b, "Request %d, sent at %s, was answered %d after %s, but a balancer re-sent it on its backend; the client never saw the first attempt.",
			q.Seq, ms(q.StartMs), q.Status, ms(q.LatencyMs))
	}
	r.pauseFacts(&b, i)
	counts := r.tierCounts(metric)
	fmt.Fprintf(&b, " The path has %d balancers (%s), and the request records hold the first one's view of its own backend hop, not which balancer %s it.", len(r.params.Tiers), strings.Join(path, " -> "), did)
	if len(counts) != len(path) {
		b.WriteString(" The run's record does not give each balancer's own counts, so which one it was is not told here.")
		return b.String()
	}
	var parts []string
	who := -1
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", path[k], int(n)))
		if n > 0 {
			if who == -1 {
				who = k
			} else {
				who = -2
			}
		}
	}
	fmt.Fprintf(&b, " Each balancer's own %s in the run: %s.", metric, strings.Join(parts, ", "))
	if who >= 0 {
		t := r.params.Tiers[who]
		r.linkFacts(&b, i, who)
		fmt.Fprintf(&b, " Only %s %s requests itself, so it %s this one", path[who], did, did)
		if q.Status >= 500 {
			fmt.Fprintf(&b, " (on_backend_error %s, error_status %d)", orDefault(t.OnBackendError, "error"), t.ErrorStatus)
			if who > 0 {
				b.WriteString("; the balancers in front of it passed its answer on.")
			} else {
				b.WriteString(".")
			}
		} else {
			b.WriteString(".")
		}
	}
	return b.String()
}

// chainNames names the run's balancers in path order: each one's preset, or its place.
func (r *Run) chainNames() []string {
	var out []string
	for k, t := range r.params.Tiers {
		name := t.Preset
		if name == "" {
			name = fmt.Sprintf("balancer %d", k+1)
		}
		out = append(out, name)
	}
	return out
}

// tierCounts is metric as each balancer hop of the run's record counted it, in path order;
// nil when the record has no hops.
func (r *Run) tierCounts(metric string) []float64 {
	var out []float64
	for _, h := range r.Record.Hops {
		if h.Role == "balancer" {
			out = append(out, h.Stats[metric])
		}
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// linkFacts places request i's pause against the race window of the link from balancer k
// of the chain to what it dials (the next balancer, closing at its idle_timeout, or the
// server): the connection sat idle for the pause plus the round trips in front of the link
// (the client's and the links' before balancer k), and the window is one round trip of the
// link wide below the close.
func (r *Run) linkFacts(b *strings.Builder, i, k int) {
	p := r.prev(i)
	if p < 0 || !r.sequential() || r.params.Load.Burst > 0 && r.Requests[i].Seq%r.params.Load.Burst != 0 {
		return
	}
	prev, q := r.Requests[p], r.Requests[i]
	pause := q.StartMs - (prev.StartMs + prev.LatencyMs)
	next, idle := "the server", msD(dur(r.params.Server.IdleTimeout))
	if k+1 < len(r.params.Tiers) {
		next, idle = r.chainNames()[k+1], msD(dur(r.params.Tiers[k+1].IdleTimeout))
	}
	if idle <= 0 {
		return
	}
	back := msD(dur(r.params.Tiers[k].BackendNetwork.RTT))
	gap := pause + msD(r.viaRTT(k)+2*r.oneWay())
	in := gap > idle-back && gap < idle
	fmt.Fprintf(b, " With the round trips in front of it, %s's connection to %s sat idle %s, %s the race window (idle − that link's RTT, idle) = (%s, %s).",
		r.chainNames()[k], next, ms(gap), map[bool]string{true: "inside", false: "outside"}[in], ms(idle-back), ms(idle))
}
