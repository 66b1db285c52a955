package explain

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// eventReasons tell which server event (server.events) closed a connection.
var eventReasons = map[string]string{
	"goaway":     "a reload (server.events goaway): the server told every connection to go",
	"drain":      "a drain (server.events drain): the server stopped taking requests",
	"restart":    "a restart (server.events restart): every connection closed at once",
	"deregister": "a deregistration (server.events deregister): the old target was stopped when its deregistration delay ended",
}

// eventNouns name each server event (server.events do:) as the stories say it.
var eventNouns = map[string]string{"goaway": "reload", "drain": "drain", "restart": "restart"}

// eventClosed names the server event that closed the connection request i rode, or "".
func (r *Run) eventClosed(i int) string {
	conn, serverID := r.attemptConn(i)
	sc := r.serverConn(serverID, conn)
	if sc == nil || r.params.balancer() != nil {
		return ""
	}
	return eventNouns[sc.Reason]
}

// goAwayFacts tells the story of an HTTP/2 request that met a reload's or a drain's GOAWAY:
// it reached the server after the GOAWAY, on a stream above its last stream id, which the
// server discards. It reports whether it told it (and the rule that followed).
func (r *Run) goAwayFacts(b *strings.Builder, q report.Request, sc *report.Conn, owd float64) bool {
	if r.params.Server.HTTP != "2" || (sc.Reason != "goaway" && sc.Reason != "drain") {
		return false
	}
	kind := eventNouns[sc.Reason]
	when := "(server.events " + sc.Reason + ")"
	at := q.StartMs + owd
	for _, e := range r.params.Server.Events {
		if e.Do != sc.Reason {
			continue
		}
		if e.At != "" {
			t := msD(dur(e.At))
			if t > at || t < q.StartMs-owd {
				continue
			}
			when = fmt.Sprintf("at %s (server.events %s at %s)", ms(t), e.Do, e.At)
		} else {
			when = fmt.Sprintf("(server.events %s after %d requests)", e.Do, e.AfterRequests)
		}
		break
	}
	fmt.Fprintf(b, " The server's %s sent a GOAWAY on it %s; the request reached the server at about %s, after that GOAWAY, on a stream above its last stream id, which the server discards (h2_bundle.go processFrame).", kind, when, ms(at))
	switch {
	case r.params.Client.HTTP2GoAway == "fail":
		b.WriteString(" client.http2_goaway fail: the client hands a stream the server did not process to the caller instead of re-sending it (Node's http2 client does; undici's source says it does too): the error reached the caller.")
	case q.HiddenRetries > 0:
		b.WriteString(" " + r.rule(q))
	default:
		b.WriteString(" Go's Transport re-sent it on a new connection (h2_bundle.go canRetryError), whose connect the drained server refused (it listens on nothing): the error reached the caller.")
	}
	return true
}

// deregisterFacts tells the story of a request the balancer answered with its error status
// because the backend connection under it was closed by a deregistered target as it was
// stopped: the deregistration delay ended while the request was in flight (AWS: "If a
// deregistering target terminates the connection before the deregistration delay elapses,
// the client receives a 500-level error response"). It reports whether it told it.
func (r *Run) deregisterFacts(b *strings.Builder, q report.Request) bool {
	sc := r.backendConn(q)
	if sc == nil || sc.Reason != "deregister" || sc.ClosedMs == nil || r.params.balancer() == nil {
		return false
	}
	closed := *sc.ClosedMs
	at, when := -1.0, ""
	for _, e := range r.params.Server.Events {
		if t := msD(dur(e.At)); e.Do == "deregister" && e.At != "" && t <= closed && t > at {
			at, when = t, e.At
		}
	}
	if at < 0 {
		return false
	}
	delay := r.params.balancer().DeregistrationDelay
	if delay == "" {
		delay = "0s"
	}
	fmt.Fprintf(b, " The backend was deregistered at %s (server.events deregister at %s); its deregistration delay of %s (balancer.deregistration_delay) ended at %s while this request was in flight: the old target was stopped and closed backend connection %d under it at %s, before any response byte.",
		ms(at), when, delay, ms(at+msD(dur(delay))), sc.ID, ms(closed))
	if on := r.params.balancer().OnBackendError; on != "" && on != "error" {
		b.WriteString(" " + r.balancerRule(q))
		return true
	}
	fmt.Fprintf(b, " %s does not re-send a request whose backend connection failed (on_backend_error error): it answered %d. A deregistration delay longer than the longest request lets the requests in flight finish.",
		capital(r.balancerName()), q.Status)
	return true
}
