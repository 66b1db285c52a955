package explain

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// middleboxFacts tells the story of a request on a connection whose flow the middlebox on
// the path had forgotten: the connection carried nothing for longer than the box's idle
// timeout (lastSeen is when its last response reached the client; the box sits at the
// client's side of the path), so the box forgot the flow, and what the client sent next
// went into the void or drew the box's reset. It says what would have kept the flow. ok is
// false when the run has no middlebox, the pause was shorter than its timeout, or the
// client's TCP keepalive probes kept the flow alive.
func (r *Run) middleboxFacts(b *strings.Builder, q report.Request, lastSeen float64) bool {
	m := r.params.Middlebox
	if m == nil {
		return false
	}
	timeout := msD(dur(m.IdleTimeout))
	idle := q.StartMs - lastSeen
	if timeout <= 0 || idle < timeout || r.probesRefresh(timeout) {
		return false
	}
	name := "the middlebox"
	if m.Preset != "" {
		name = "the middlebox (" + m.Preset + ")"
	}
	fmt.Fprintf(b, " The connection then sat idle %s, past the %s idle timeout of %s on the path: the box forgot the flow at about %s, %s before the request.",
		ms(idle), ms(timeout), name, ms(lastSeen+timeout), ms(idle-timeout))
	b.WriteString(" " + r.voidFate(q))
	if r.h3() {
		fmt.Fprintf(b, " A keep-alive PING more often than every %s (client.quic.keepalive_period) would have kept the flow.", ms(timeout))
		return true
	}
	fmt.Fprintf(b, " A client idle timeout below %s (client.idle_timeout) would have closed the connection before the box forgot it, and TCP keepalive probes more often than that (client.tcp_keepalive idle and interval) would have kept the flow alive.", ms(timeout))
	return true
}

// voidFate says what became of a request sent on a forgotten flow, by what the box does
// after expiry.
func (r *Run) voidFate(q report.Request) string {
	m := r.params.Middlebox
	toClient := m.ResetTo == "client" || m.ResetTo == "both"
	switch {
	case m.OnExpiry == "reset" && m.ResetAt == "next-segment" && toClient:
		return fmt.Sprintf("Its %s was the flow's next segment, and the box answered it with a reset.", method(r.params.Client.Method))
	case m.OnExpiry == "reset" && toClient:
		return "The box had reset the flow when it forgot it; the client's pool had not yet seen that reset when it sent the request."
	case q.Class == "timeout":
		return fmt.Sprintf("Its %s went into the void: the box dropped it, and nothing came back until the client gave up after %s (client.timeout).", method(r.params.Client.Method), r.params.Client.Timeout)
	}
	return fmt.Sprintf("Its %s went into the void: the box dropped it.", method(r.params.Client.Method))
}

// probesRefresh reports whether the client's TCP keepalive probes come often enough to keep
// a flow alive past a box's idle timeout: the first after the keepalive idle time, then one
// every interval.
func (r *Run) probesRefresh(timeout float64) bool {
	ka := r.params.Client.TCPKeepalive
	idle, every := msD(dur(ka.Idle)), msD(dur(ka.Interval))
	return idle > 0 && idle < timeout && every > 0 && every < timeout
}
