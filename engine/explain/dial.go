package explain

import (
	"fmt"
	"strings"
)

// dialStory explains a request that failed before its connection opened: with a listen
// queue in the run, the queue was full when its SYN arrived, the SYN was dropped, and the
// client's kernel was still re-sending it when the client's timeout ended the wait. No
// request went out, so no client rule could re-send it.
func (r *Run) dialStory(i int) string {
	q := r.Requests[i]
	var b strings.Builder
	fmt.Fprintf(&b, "Request %d failed with %s after %s (%q): its connection never opened.", q.Seq, q.Class, ms(q.LatencyMs), q.Error)
	s := r.params.Server
	if s.Backlog > 0 {
		fmt.Fprintf(&b, " The server's listen queue holds %d waiting connections (server.backlog; the kernel takes one more), and the server accepts one per %s (server.accept_delay).", s.Backlog, s.AcceptDelay)
		if c := r.params.Load.Concurrency; c > s.Backlog+1 {
			fmt.Fprintf(&b, " %d requests started at once (load.concurrency), each dialing its own connection, so the queue was full when this one's SYN arrived and the SYN was dropped.", c)
		} else {
			b.WriteString(" The queue was full when its SYN arrived, and the SYN was dropped.")
		}
		fmt.Fprintf(&b, " The client's kernel re-sends a dropped SYN, first after about 1 s (%d connections of this run got in on such a retry: syn_retried_connects); this one's retries found no room before the client's timeout", int(r.Record.Metrics.SYNRetriedConnects))
		if t := r.params.Client.Timeout; t != "" && t != "0s" {
			fmt.Fprintf(&b, " of %s (client.timeout)", t)
		}
		b.WriteString(" ended the wait.")
	} else {
		b.WriteString(" The run models no listen queue, so the records do not say why the connect failed.")
	}
	b.WriteString(" " + r.dialRule(q.Attempts))
	return b.String()
}

// dialRule says why a request whose connection never opened reached the caller as an error.
func (r *Run) dialRule(attempts int) string {
	name := r.clientName()
	switch {
	case attempts > 1:
		return fmt.Sprintf("%s retried it %d time%s (retry.attempts %d) and every dial failed: the error reached the caller.", name, attempts-1, plural(attempts-1), r.params.Client.Retry.Attempts)
	case r.params.Client.Implementation == "go-net-http":
		return fmt.Sprintf("%s (Go's net/http Transport) returns a failed dial to the caller: no request went out on it, so there was nothing to re-send.", name)
	}
	return fmt.Sprintf("No request went out on it, and %s's retry rule did not dial again: the error reached the caller.", name)
}
