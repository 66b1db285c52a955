package stage

import "time"

// ListenQueue is the stage at a link's edge: the accept queue of a server that accepts
// one connection per Delay, and the connections it has not accepted yet, of which it
// holds Backlog+1 at most. Its user serializes the calls.
type ListenQueue struct {
	Backlog int           // 0: no limit
	Delay   time.Duration // how long the server takes per accept
	free    time.Time     // when the modelled server can accept the next connection
	pending []time.Time   // accept times of connections still waiting in the queue
}

// Full reports whether a connection arriving at now finds the queue full: Backlog+1
// connections still waiting, which is when Linux's sk_acceptq_is_full holds.
func (q *ListenQueue) Full(now time.Time) bool {
	k := 0
	for _, at := range q.pending {
		if at.After(now) {
			q.pending[k] = at
			k++
		}
	}
	q.pending = q.pending[:k]
	return q.Backlog > 0 && len(q.pending) > q.Backlog
}

// Enter queues a connection arriving at now and returns when the modelled server
// accepts it: at once when the server is free, else one delay after its previous accept.
func (q *ListenQueue) Enter(now time.Time) time.Time {
	at := now
	if q.free.After(at) {
		at = q.free
	}
	q.free = at.Add(q.Delay)
	if at.After(now) {
		q.pending = append(q.pending, at)
	}
	return at
}
