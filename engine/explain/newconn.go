package explain

import (
	"fmt"
)

// unexpectedNew explains request i's new connection when the run's rules do not account for
// it (it is not the run's first, follows no failure, no close the client saw, no idle
// limit); "" when the request reused a connection or its new one is expected.
func (r *Run) unexpectedNew(i int) string {
	q := r.Requests[i]
	if q.Reused || q.Status == 0 || r.notable(i) || !r.params.Client.KeepAlive || i == 0 {
		return ""
	}
	if r.sequential() {
		return r.sequentialNew(i)
	}
	return r.concurrentNew(i)
}

func (r *Run) sequentialNew(i int) string {
	p := r.prev(i)
	if p < 0 {
		return "" // the client's first request
	}
	q, prev := r.Requests[i], r.Requests[p]
	if prev.Class != "" || prev.Conn == 0 {
		return "" // the connection before it died with its request
	}
	if sc := r.serverConn(prev.ServerConn, prev.Conn); sc != nil && sc.ClosedMs != nil {
		if sc.ClosedBy == "client" || *sc.ClosedMs+msD(r.oneWay()) <= q.StartMs || sc.Reason == "max_requests" || sc.Reason == "requested" {
			return "" // the client saw the close (or closed it) before it sent this request
		}
	}
	pause := q.StartMs - (prev.StartMs + prev.LatencyMs)
	if ci := msD(dur(r.params.Client.IdleTimeout)); ci > 0 && pause >= ci {
		return "" // the client's own idle limit dropped it
	}
	return fmt.Sprintf("Request %d, sent at %s, opened a new connection %d although connection %d had answered request %d %s earlier and no close of it had reached the client: the records show no rule of %s that drops it (a hint it read, or a liveness check that saw the connection die).",
		q.Seq, ms(q.StartMs), q.Conn, prev.Conn, prev.Seq, ms(pause), r.clientName())
}

// concurrentNew explains a dial in a run with requests in flight: every connection the
// client had was busy, or the pool had closed those beyond its idle slots.
func (r *Run) concurrentNew(i int) string {
	q := r.Requests[i]
	seen := map[uint64]bool{}
	inFlight := 0
	for j, o := range r.Requests {
		if j == i || o.StartMs > q.StartMs {
			continue
		}
		// A connection could have served q only if its request had finished by then.
		if done := o.StartMs+o.LatencyMs <= q.StartMs; done && o.Conn != 0 && o.Conn != q.Conn {
			seen[o.Conn] = true
		} else if !done {
			inFlight++
		}
	}
	if len(seen) == 0 {
		return "" // the first wave: no connection had come free yet
	}
	if mi := r.params.Client.MaxIdle; mi > 0 {
		return fmt.Sprintf("Request %d, sent at %s, opened a new connection %d: pool full: %d other requests in flight, %d idle slots (client.max_idle %d); the %d connections used before it beyond those slots were closed when they went idle, so it dialed.",
			q.Seq, ms(q.StartMs), q.Conn, inFlight, mi, mi, max(0, len(seen)-mi))
	}
	return fmt.Sprintf("Request %d, sent at %s, opened a new connection %d: %d other requests were in flight on the %d connections used before it, none idle, so it dialed.",
		q.Seq, ms(q.StartMs), q.Conn, inFlight, len(seen))
}
