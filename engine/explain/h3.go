package explain

import (
	"fmt"
	"strings"
)

// h3 reports whether the run spoke HTTP/3: QUIC over UDP datagrams.
func (r *Run) h3() bool { return r.params.Server.HTTP == "3" }

// natExpiredInFlight reports whether request i, an HTTP/3 request that failed, was still
// waiting for its answer when the NAT on the path forgot its flow: it outlived the NAT's
// idle timeout, the NAT forgot a flow in the run, and its connection had not sat idle past
// that timeout before it.
func (r *Run) natExpiredInFlight(i int) bool {
	q, m := r.Requests[i], r.params.Middlebox.first()
	if !r.h3() || m == nil || q.Class == "" || r.Record.Metrics.MiddleboxExpired == 0 {
		return false
	}
	timeout := msD(dur(m.IdleTimeout))
	if j := r.prevResponse(i, q.Conn); j >= 0 {
		if last := r.Requests[j]; q.StartMs-(last.StartMs+last.LatencyMs) >= timeout {
			return false // the flow expired in the pause before the request: staleStory tells it
		}
	}
	return timeout > 0 && q.LatencyMs > timeout
}

// natStory explains an HTTP/3 request that died in flight because the NAT forgot the UDP
// flow while the request waited: nothing crossed the flow (no keep-alive PINGs), the NAT
// expired it, the answer came back to a port that led nowhere and was dropped, and the
// client, sending nothing, never moved to a new port the server could follow; its idle
// timeout ended the connection. A PING more often than the NAT's timeout keeps the flow.
func (r *Run) natStory(i int) string {
	q, m, met := r.Requests[i], r.params.Middlebox.first(), r.Record.Metrics
	timeout := msD(dur(m.IdleTimeout))
	var b strings.Builder
	b.WriteString(r.outcome(q))
	fmt.Fprintf(&b, " It went over HTTP/3, one QUIC connection on UDP, through %s on the path, which forgets a UDP flow after %s with nothing crossing it (middlebox.idle_timeout %s).",
		r.middleboxName(), ms(timeout), m.IdleTimeout)
	if d := msD(dur(r.params.Server.Response.Delay)); d > timeout {
		fmt.Fprintf(&b, " The server answered only after %s (server.response.delay %s),", ms(d), r.params.Server.Response.Delay)
	} else {
		fmt.Fprintf(&b, " The request waited %s in all,", ms(q.LatencyMs))
	}
	if p := r.params.Client.Quic.KeepalivePeriod; p != "" && p != "0s" {
		fmt.Fprintf(&b, " and the client's keep-alive PINGs (client.quic.keepalive_period %s) came less often than the NAT's timeout.", p)
	} else {
		fmt.Fprintf(&b, " and nothing crossed the flow while the request waited: the client sends no keep-alive PINGs (client.quic.keepalive_period not set; pings_sent %d).", int(met.PingsSent))
	}
	fmt.Fprintf(&b, " So the NAT forgot the flow about %s after the request (middlebox_expired %d), before the answer came;", ms(timeout), int(met.MiddleboxExpired))
	fmt.Fprintf(&b, " the answer came back to a port that no longer led to the client, and the NAT dropped it (middlebox_dropped_datagrams %d in the run).", int(met.MiddleboxDroppedDatagrams))
	if m.OnExpiry == "rebind" && met.MiddleboxRebinds == 0 {
		b.WriteString(" The client sent nothing after that, so it never left from a new port the server could have followed (middlebox_rebinds 0, path_migrations 0).")
	}
	fmt.Fprintf(&b, " The client closed the connection when its idle timeout passed%s, at %s.", r.quicIdleText(), ms(q.StartMs+q.LatencyMs))
	fmt.Fprintf(&b, " A keep-alive PING more often than every %s (client.quic.keepalive_period) would have kept the flow, and the answer would have reached the client.", ms(timeout))
	b.WriteString(" " + r.rule(q))
	return b.String()
}

// quicIdleText names the idle timeout QUIC negotiated: the lower of both ends'
// max_idle_timeout.
func (r *Run) quicIdleText() string {
	c, s := r.params.Client.IdleTimeout, r.params.Server.IdleTimeout
	switch {
	case dur(c) > 0 && (dur(s) == 0 || dur(c) <= dur(s)):
		return fmt.Sprintf(" (client.idle_timeout %s, the lower of both ends' max_idle_timeout)", c)
	case dur(s) > 0:
		return fmt.Sprintf(" (server.idle_timeout %s, the lower of both ends' max_idle_timeout)", s)
	}
	return ""
}

// middleboxName is the middlebox as the text names it, with its preset.
func (r *Run) middleboxName() string {
	if m := r.params.Middlebox.first(); m != nil && m.Preset != "" {
		return "the NAT " + m.Preset
	}
	return "a NAT"
}
