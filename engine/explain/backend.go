package explain

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// backendStory explains a request a balancer answered with its own error status, or
// re-sent to the server without the client seeing it.
func (r *Run) backendStory(i int) string {
	if len(r.params.Tiers) > 1 {
		return r.chainStory(i)
	}
	q := r.Requests[i]
	var b strings.Builder
	bal := r.balancerName()
	if q.Status >= 500 {
		fmt.Fprintf(&b, "Request %d, sent at %s on client connection %d, was answered %d by %s after %s; the client saw a response, not an error.",
			q.Seq, ms(q.StartMs), q.Conn, q.Status, bal, ms(q.LatencyMs))
	} else {
		fmt.Fprintf(&b, "Request %d, sent at %s, was answered %d after %s, but %s needed %d attempts on the backend; the client never saw the first.",
			q.Seq, ms(q.StartMs), q.Status, ms(q.LatencyMs), bal, q.BackendAttempts)
	}
	r.pauseFacts(&b, i)
	if q.Status >= 500 && r.deregisterFacts(&b, q) {
		return b.String()
	}
	front, back := msD(r.oneWay()), msD(r.backOneWay())
	sent := q.StartMs + front
	prev := r.prevBackend(i)
	if prev < 0 {
		b.WriteString(" No earlier request of the records rode a backend connection, so nothing says one was stale.")
		b.WriteString(" " + r.balancerRule(q))
		return b.String()
	}
	p := r.Requests[prev]
	// The earlier request's response left the server about one backend one-way delay and
	// one client one-way delay before the client had it.
	wrote := p.StartMs + p.LatencyMs - front - back
	fmt.Fprintf(&b, " %s forwarded it at about %s on the backend connection request %d had left in its pool, whose last response the server wrote at about %s.",
		capital(bal), ms(sent), p.Seq, ms(wrote))
	sc := r.backendConn(p)
	if sc == nil || sc.ClosedMs == nil {
		b.WriteString(" The connection records do not say when that backend connection closed.")
	} else {
		closed := *sc.ClosedMs
		fmt.Fprintf(&b, " The server closed that connection at %s (%s), %s after its last write; its FIN reached %s at about %s (backend one-way delay %s), %s.",
			ms(closed), r.reasonText(sc.ClosedBy, sc.Reason), ms(closed-wrote), bal, ms(closed+back), ms(back), relative(closed+back, sent, "it forwarded the request"))
		fmt.Fprintf(&b, " The request reached the server at about %s, %s, and met a closed socket.", ms(sent+back), relative(sent+back, closed, "the close"))
	}
	b.WriteString(" " + r.balancerRule(q))
	return b.String()
}

// prevBackend is the last request before i whose final backend attempt succeeded.
func (r *Run) prevBackend(i int) int {
	for j := i - 1; j >= 0; j-- {
		if q := r.Requests[j]; q.BackendConn != 0 && q.Status > 0 && q.Status < 500 {
			return j
		}
	}
	return -1
}

// backendConn is the server's record of the connection request q rode to it.
func (r *Run) backendConn(q report.Request) *report.Conn {
	if q.ServerConn != 0 {
		if c := r.serverConn(q.ServerConn, 0); c != nil {
			return c
		}
	}
	if c := r.serverConn(0, q.BackendConn); c != nil {
		return c
	}
	// The balancer is the server's only client and both number connections in the order
	// they open (the balancer dials, the server accepts), so the server's connection n is
	// the balancer's backend connection n; it must have opened before q started.
	for k := range r.Conns {
		if c := &r.Conns[k]; c.Side == "server" && c.ClientConn == 0 && c.ID == q.BackendConn && c.OpenedMs <= q.StartMs+q.LatencyMs {
			return c
		}
	}
	return nil
}

// balancerRule names the balancer rule that produced what the client saw.
func (r *Run) balancerRule(q report.Request) string {
	on := ""
	if b := r.params.balancer(); b != nil {
		on = b.OnBackendError
	}
	if q.Status >= 500 {
		switch on {
		case "retry_idempotent":
			return fmt.Sprintf("The balancer re-sends only idempotent requests (on_backend_error retry_idempotent, nginx proxy_next_upstream since 1.9.13); a %s is not, so it answered %d.", method(r.params.Client.Method), q.Status)
		default:
			return fmt.Sprintf("The balancer does not re-send a request that failed on a backend connection (on_backend_error %s): it answered %d (AWS: keep the backend's idle timeout above the balancer's).", on, q.Status)
		}
	}
	return fmt.Sprintf("The balancer re-sent it on a new backend connection (on_backend_error %s: a %s is idempotent); kalab counts it in balancer_retries.", on, method(r.params.Client.Method))
}
