package explain

import (
	"fmt"
	"strings"
)

// neverAccepted reports whether request i failed on a new connection of a run with a
// listen queue that the server never accepted: the connection records hold no server side
// for it. Such a request waited in, or for, the queue.
func (r *Run) neverAccepted(i int) bool {
	q := r.Requests[i]
	if q.Class == "" || q.Reused || q.Conn == 0 || r.params.Server.Backlog <= 0 {
		return false
	}
	return r.prevResponse(i, q.Conn) < 0 && r.serverConn(q.ServerConn, q.Conn) == nil
}

// listenStory explains a request whose connection the server never accepted: the listen
// queue's size and accept rate, how many connections came at it at once, whether the
// request's SYN was dropped and re-sent (its connect took a second or more), and when the
// client gave up.
func (r *Run) listenStory(i int) string {
	q := r.Requests[i]
	s := r.params.Server
	var b strings.Builder
	b.WriteString(r.outcome(q))
	fmt.Fprintf(&b, " The server never accepted connection %d: the connection records hold no server side for it.", q.Conn)
	fmt.Fprintf(&b, " The server's listen queue holds %d waiting connections (server.backlog %d; the kernel takes one more)", s.Backlog+1, s.Backlog)
	drain := 0.0
	if a := msD(dur(s.AcceptDelay)); a > 0 {
		drain = a * float64(s.Backlog+1)
		fmt.Fprintf(&b, " and the server accepts one every %s (server.accept_delay), so a full queue takes %s to empty", ms(a), ms(drain))
	}
	b.WriteString(".")
	if n := r.startedNear(q.StartMs, drain); !r.Subset && n > s.Backlog+1 {
		fmt.Fprintf(&b, " %d requests started within %s of this one, each dialing its own connection: more than the queue holds.", n, ms(drain))
	}
	if q.ConnectMs >= 1000 {
		fmt.Fprintf(&b, " Its connect took %s: its first SYN met a full queue and was dropped, and the client's kernel sent it again after about 1 s (this run counts %d connects like it in syn_retried_connects).",
			ms(q.ConnectMs), int(r.Record.Metrics.SYNRetriedConnects))
		b.WriteString(" The retry completed the handshake on the client's side, but the server had not taken the connection from the queue")
	} else if q.ConnectMs > 0 {
		fmt.Fprintf(&b, " Its handshake completed on the client's side after %s, but the server had not taken the connection from the queue", ms(q.ConnectMs))
	} else {
		b.WriteString(" Its connect did not complete: the queue had no room for its SYN or the ones the kernel re-sent")
	}
	fmt.Fprintf(&b, " when the client gave up at %s", ms(q.StartMs+q.LatencyMs))
	if t := r.params.Client.Timeout; t != "" && t != "0s" {
		fmt.Fprintf(&b, " (client.timeout %s)", t)
	}
	if o := r.Record.Metrics.ListenOverflows; o > 0 {
		fmt.Fprintf(&b, "; %d connections of the run were reset because the queue was full (listen_overflows)", int(o))
	}
	b.WriteString(".")
	b.WriteString(" " + r.rule(q))
	return b.String()
}

// startedNear counts the requests that started within d of at (either side).
func (r *Run) startedNear(at, d float64) int {
	n := 0
	for _, q := range r.Requests {
		if q.StartMs >= at-d && q.StartMs <= at+d {
			n++
		}
	}
	return n
}
