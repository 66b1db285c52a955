package explain

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// attemptConn is the client connection (and the server's id for it, when the record names
// it) that request i's failed attempt rode. A retried or re-sent request's record names its
// final connection; in a sequential run the attempt that failed rode the connection the
// request before it left in the pool.
func (r *Run) attemptConn(i int) (conn, serverID uint64) {
	q := r.Requests[i]
	if p := r.prev(i); q.Class == "" && p >= 0 && r.sequential() {
		return r.Requests[p].Conn, 0
	}
	return q.Conn, q.ServerConn
}

// staleStory explains a request that failed, or was retried or re-sent, on the client's
// own connection: the stale-connection race and its relatives.
func (r *Run) staleStory(i int) string {
	q := r.Requests[i]
	var b strings.Builder
	b.WriteString(r.outcome(q))
	conn, serverID := r.attemptConn(i)
	r.pauseFacts(&b, i)
	j := r.prevResponse(i, conn)
	if j < 0 {
		fmt.Fprintf(&b, " Connection %d carried no response before it, so nothing in the records says it was stale.", conn)
		b.WriteString(" " + r.rule(q))
		return b.String()
	}
	last := r.Requests[j]
	arrived := last.StartMs + last.LatencyMs
	owd := msD(r.oneWay())
	peer, sc := "the server", r.serverConn(serverID, conn)
	if r.params.balancer() != nil {
		// The client's connections end at the balancer: it wrote the response and closes them.
		peer, sc = "the balancer", r.balancerConn(conn, q)
	}
	fmt.Fprintf(&b, " Its connection %d last carried a response at %s (request %d's, written by %s at about %s).",
		conn, ms(arrived), last.Seq, peer, ms(arrived-owd))
	if (sc == nil || sc.ClosedMs == nil || *sc.ClosedMs > q.StartMs) && r.middleboxFacts(&b, q, arrived) {
		b.WriteString(" " + r.rule(q))
		return b.String()
	}
	if sc == nil || sc.ClosedMs == nil {
		b.WriteString(" The connection records do not say when that connection closed.")
		b.WriteString(" " + r.rule(q))
		return b.String()
	}
	if r.goAwayFacts(&b, q, sc, owd) {
		return b.String()
	}
	r.closeFacts(&b, q, sc, arrived-owd, owd, peer)
	b.WriteString(" " + r.rule(q))
	return b.String()
}

// outcome is the paragraph's first sentence: what happened to the request.
func (r *Run) outcome(q report.Request) string {
	switch {
	case q.Class != "":
		return fmt.Sprintf("Request %d failed with %s after %s (%q), sent at %s on connection %d (%s).",
			q.Seq, q.Class, ms(q.LatencyMs), q.Error, ms(q.StartMs), q.Conn, reusedWord(q.Reused))
	case q.HiddenRetries > 0:
		return fmt.Sprintf("Request %d, sent at %s, was re-sent %d time%s without the caller seeing it and answered %d on connection %d (new) after %s.",
			q.Seq, ms(q.StartMs), q.HiddenRetries, plural(q.HiddenRetries), q.Status, q.Conn, ms(q.LatencyMs))
	}
	return fmt.Sprintf("Request %d, sent at %s, took %d attempts and was answered %d on connection %d (%s) after %s.",
		q.Seq, ms(q.StartMs), q.Attempts, q.Status, q.Conn, reusedWord(q.Reused), ms(q.LatencyMs))
}

func reusedWord(reused bool) string {
	if reused {
		return "reused"
	}
	return "new"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// pauseFacts names the pause before the request when it opened a burst of a sequential run,
// and where that pause lies against the race window (idle − RTT, idle).
func (r *Run) pauseFacts(b *strings.Builder, i int) {
	p := r.prev(i)
	if p < 0 || !r.sequential() {
		return
	}
	prev, q := r.Requests[p], r.Requests[i]
	pause := q.StartMs - (prev.StartMs + prev.LatencyMs)
	switch {
	case q.Client != "" && pause < 0:
		fmt.Fprintf(b, " Client %s sent it while its request %d was still in flight.", q.Client, prev.Seq)
		return
	case q.Client != "":
		fmt.Fprintf(b, " Client %s sent it after a pause of %s (from its request %d's response to this start)", q.Client, ms(pause), prev.Seq)
	case r.params.Load.Burst > 0 && q.Seq%r.params.Load.Burst != 0:
		fmt.Fprintf(b, " It followed request %d's response by %s, inside a burst.", prev.Seq, ms(pause))
		return
	default:
		fmt.Fprintf(b, " It opened a burst after a pause of %s (from request %d's response to its start)", ms(pause), prev.Seq)
	}
	if why := r.eventClosed(i); why != "" {
		fmt.Fprintf(b, "; the server's %s, not an idle timer, closed its connection, so the pause does not decide this race.", why)
		return
	}
	idle, rtt := msD(dur(r.params.Server.IdleTimeout)), msD(dur(r.params.Network.RTT))
	hop := ""
	if bal := r.params.balancer(); bal != nil && !r.backendFailure(i) {
		// The client's connection ends at the balancer: its idle timeout makes the window.
		idle, hop = msD(dur(bal.IdleTimeout)), " of the client's hop to "+r.balancerName()
	}
	if idle <= 0 {
		b.WriteString(".")
		return
	}
	if r.params.balancer() != nil && hop == "" {
		r.backendWindow(b, pause+rtt, idle)
		return
	}
	lo, hi := idle-rtt, idle
	if ci := msD(dur(r.params.Client.IdleTimeout)); ci > 0 && ci < hi {
		hi = ci
	}
	switch {
	case pause > lo && pause < hi:
		fmt.Fprintf(b, ", inside the race window (idle − RTT, idle) = (%s, %s)%s.", ms(lo), ms(hi), hop)
	case pause <= lo:
		fmt.Fprintf(b, ", %s below the race window (%s, %s): timer lateness moved it in.", ms(lo-pause), ms(lo), ms(hi))
	default:
		fmt.Fprintf(b, ", %s past the race window (%s, %s): timer lateness moved it in.", ms(pause-hi), ms(lo), ms(hi))
	}
}

// closeFacts tells when and why the connection was closed, when its FIN reached the
// client, and where the request was then; peer is the client's end of the hop ("the
// server", or "the balancer" in front of it).
func (r *Run) closeFacts(b *strings.Builder, q report.Request, sc *report.Conn, lastWrite, owd float64, peer string) {
	closed := *sc.ClosedMs
	var who string
	switch sc.ClosedBy {
	case "":
		who = peer
	case report.ClosedByBalancer:
		who = r.balancerName()
	default:
		who = "the " + sc.ClosedBy
	}
	fmt.Fprintf(b, " %s closed it at %s (%s), %s after its last write.", capital(who), ms(closed), r.reasonText(sc.ClosedBy, sc.Reason), ms(closed-lastWrite))
	if sc.ClosedBy == report.ClosedByClient {
		return
	}
	fin := closed + owd
	fmt.Fprintf(b, " Its FIN reached the client at about %s (one-way delay %s).", ms(fin), ms(owd))
	at := q.StartMs + owd
	if q.StartMs < fin {
		fmt.Fprintf(b, " The client sent the request at %s, %s, so its pool still held the connection as open;",
			ms(q.StartMs), relative(q.StartMs, fin, "that FIN arrived"))
	} else {
		fmt.Fprintf(b, " The client sent the request at %s, %s, on a connection whose FIN it had already received;",
			ms(q.StartMs), relative(q.StartMs, fin, "that FIN arrived"))
	}
	if at > closed {
		fmt.Fprintf(b, " the request reached %s at about %s, %s, and met a closed socket (the kernel answers with a reset).", peer, ms(at), relative(at, closed, "the close"))
	} else {
		fmt.Fprintf(b, " the request reached %s at about %s, %s, as %s was closing it.", peer, ms(at), relative(at, closed, "the close"), peer)
	}
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// reasonText names why a connection was closed, with the setting that made it: by the
// server (who "server" or ""), or by the client's own pool (who "client").
func (r *Run) reasonText(who, reason string) string {
	switch who {
	case report.ClosedByClient:
		return r.clientReasonText(reason)
	case report.ClosedByBalancer:
		return r.balancerReasonText(reason)
	}
	switch reason {
	case "idle":
		if t := r.params.Server.IdleTimeout; t != "" && t != "0s" {
			return "idle timeout: server.idle_timeout " + t
		}
		return "idle timeout"
	case "max_requests":
		return fmt.Sprintf("it had served server.max_requests %d", r.params.Server.MaxRequests)
	case "close_every":
		return "server.close_every"
	case "requested":
		return "the request asked for Connection: close"
	case "end":
		return "the run ended"
	case "goaway", "drain", "restart", "deregister":
		return eventReasons[reason]
	case "", "unknown":
		return "reason not recorded"
	}
	return reason
}

// clientReasons name the closes the client's pool decides (the client package's Reason
// constants).
var clientReasons = map[string]string{
	"broken":         "an attempt on it had failed",
	"keepalive_off":  "client.keepalive is off",
	"response_close": "the response said Connection: close",
	"hint":           "the server's Keep-Alive hint left no idle time",
	"unread":         "bytes arrived after the response",
	"too_many_idle":  "the idle pool was full: client.max_idle",
	"end":            "the run ended",
	"pool_closed":    "undici 7's Agent closed its pool when the origin's count of connections fell to zero: client.drop_empty_pool",
	"":               "reason not recorded",
	"unknown":        "reason not recorded",
}

// clientReasonText is reasonText for a close by the client.
func (r *Run) clientReasonText(reason string) string {
	if reason == "idle" {
		if t := r.params.Client.IdleTimeout; t != "" && t != "0s" {
			return "the client's idle timeout: client.idle_timeout " + t
		}
		return "the client's idle timeout"
	}
	if text, ok := clientReasons[reason]; ok {
		return text
	}
	return reason
}

// balancerReasonText is reasonText for the balancer's close of a client connection.
func (r *Run) balancerReasonText(reason string) string {
	switch reason {
	case "idle":
		if b := r.params.balancer(); b != nil && b.IdleTimeout != "" && b.IdleTimeout != "0s" {
			return "its idle timeout: balancer.idle_timeout " + b.IdleTimeout
		}
		return "its idle timeout"
	case "error":
		return "a backend attempt had failed: on_backend_error close"
	case "after_response":
		return "after a response: the request asked for Connection: close"
	case "end":
		return "the run ended"
	}
	return "reason not recorded"
}

// rule names the client rule that turned the stale connection into what the caller saw.
func (r *Run) rule(q report.Request) string {
	c := r.params.Client
	name := r.clientName()
	goT := c.Implementation == "go-net-http"
	switch {
	case q.HiddenRetries > 0 && goT:
		return fmt.Sprintf("%s (Go's net/http Transport) re-sent it on a new connection without telling the caller: a replayable %s that failed on a reused connection is retried (transport.go shouldRetryRequest, request.go isReplayable); kalab counts it in hidden_retries.", name, method(c.Method))
	case q.HiddenRetries > 0:
		return fmt.Sprintf("%s re-sent it silently on a new connection (retry.hidden: the real client does this without telling the caller); kalab counts it in hidden_retries.", name)
	case q.Class == "" && q.Attempts > 1:
		return fmt.Sprintf("%s's retry rule (retry.attempts %d on %s) re-sent it on a new connection; kalab counts it in retries.", name, c.Retry.Attempts, strings.Join(c.Retry.On, ", "))
	case goT && !q.Reused:
		return fmt.Sprintf("%s (Go's net/http Transport) re-sends only a request that failed on a reused connection; this one's connection was new (transport.go shouldRetryRequest: a fresh connection's failure is returned): the error reached the caller.", name)
	case goT && !replayableMethod(c.Method):
		return fmt.Sprintf("%s (Go's net/http Transport) does not re-send a %s that is not replayable (request.go isReplayable): the error reached the caller.", name, method(c.Method))
	case goT:
		return fmt.Sprintf("%s (Go's net/http Transport) did not re-send it: transport.go shouldRetryRequest re-sends a replayable request only when its reused connection failed before the server could have seen it: the error reached the caller.", name)
	case c.Retry.Attempts == 0:
		return fmt.Sprintf("%s does not retry (retry.attempts 0): the error reached the caller.", name)
	case q.Attempts > c.Retry.Attempts:
		return fmt.Sprintf("%s retried it %d time%s (retry.attempts %d) and the last attempt failed too: the error reached the caller.", name, q.Attempts-1, plural(q.Attempts-1), c.Retry.Attempts)
	}
	return fmt.Sprintf("%s's retry rule (retry.attempts %d on %s) did not cover this failure: the error reached the caller.", name, c.Retry.Attempts, strings.Join(c.Retry.On, ", "))
}

// replayableMethod is Go's request.go isReplayable for a request without a body: GET, HEAD,
// OPTIONS and TRACE (and any request with an Idempotency-Key, which kalab does not send).
func replayableMethod(m string) bool {
	switch method(m) {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return false
}

func method(m string) string {
	if m == "" {
		return "GET"
	}
	return m
}

// plainStory describes an unremarkable request.
func (r *Run) plainStory(i int) string {
	q := r.Requests[i]
	return fmt.Sprintf("Request %d, sent at %s, was answered %d on connection %d (%s) after %s; nothing about it needs explaining.",
		q.Seq, ms(q.StartMs), q.Status, q.Conn, reusedWord(q.Reused), ms(q.LatencyMs))
}

// backendWindow places a gap (a pause plus the client's round trip) at the balancer's
// backend pool against its race window, one backend round trip wide below the server's
// idle close. Behind a chain of balancers it says nothing here: which link decides is
// chainStory's.
func (r *Run) backendWindow(b *strings.Builder, gap, idle float64) {
	if len(r.params.Tiers) > 1 {
		b.WriteString(".")
		return
	}
	back := 2 * msD(r.backOneWay())
	in := gap > idle-back && gap < idle
	fmt.Fprintf(b, "; with the client's round trip the backend connection sat idle %s at the balancer, %s the race window (idle − backend RTT, idle) = (%s, %s).",
		ms(gap), map[bool]string{true: "inside", false: "outside"}[in], ms(idle-back), ms(idle))
}
