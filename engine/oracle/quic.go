package oracle

import (
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/fault"
)

// QUIC is an HTTP/3 run's transport: both ends' max_idle_timeout (0: none advertised) and
// what the path does to datagrams.
type QUIC struct {
	ServerIdle, ClientIdle time.Duration
	// Lossy: the link drops datagrams (network.loss), and loss recovery's timers decide
	// what the idle clock sees.
	Lossy bool
}

// negotiated is the idle timeout both ends apply: the smaller advertised one, or the sole
// one (RFC 9000 section 10.1); 0 when neither advertises one.
func (q QUIC) negotiated() time.Duration {
	switch {
	case q.ServerIdle == 0:
		return q.ClientIdle
	case q.ClientIdle == 0:
		return q.ServerIdle
	}
	if fault.On(fault.OracleQUICMax) {
		return max(q.ServerIdle, q.ClientIdle)
	}
	return min(q.ServerIdle, q.ClientIdle)
}

// quicPredict predicts an HTTP/3 run. Over QUIC an idle connection ends silently at both
// ends when the negotiated idle timeout passes, with no FIN that a request could cross: a
// request after a longer pause opens a new connection and nothing fails. A sequential run's
// connections are its first and one per pause at least as long as the timeout; a pause
// within one round trip of it is uncertain (the ends start their idle clocks at their own
// last packet, half a round trip apart, and the client's last ACK may or may not restart
// the server's).
func quicPredict(p Plan, lateness time.Duration) Prediction {
	if why := quicUnpredictable(p); why != "" {
		return notPredicted(singleHop, why, lateness)
	}
	idle := p.QUIC.negotiated()
	out := Prediction{Rule: "quic-idle", LatenessMs: ms(lateness)}
	conns, lo, hi := 1, 1, 1
	var opened, uncertain []int
	margin := p.RTT + 2*p.Jitter + lateness
	for i, pause := range p.Pauses {
		seq := (i + 1) * p.Burst
		if seq >= p.Requests || idle == 0 {
			break
		}
		switch {
		case pause >= idle+margin:
			conns, lo, hi = conns+1, lo+1, hi+1
			opened = append(opened, seq)
		case pause > idle-margin:
			uncertain = append(uncertain, seq)
			hi++
		}
	}
	why := fmt.Sprintf("the negotiated idle timeout is %s (min of server %s and client %s): each pause at least that long ends the connection at both ends, silently, and the next request opens one", fmtIdle(idle), fmtIdle(p.QUIC.ServerIdle), fmtIdle(p.QUIC.ClientIdle))
	c := Count{Metric: Connections, Predicted: true, Value: conns, Lo: lo, Hi: hi, Reason: why,
		Window: fmt.Sprintf("pauses >= %s", fmtIdle(idle)), Requests: opened, Uncertain: uncertain}
	r := Count{Metric: ReusedRequests, Predicted: true, Value: p.Requests - conns, Lo: p.Requests - hi, Hi: p.Requests - lo, Reason: "every request not on a new connection reuses the one before it", Uncertain: uncertain}
	out.Counts = append(out.Counts,
		exact(Errors, 0, "a QUIC connection that timed out idle is gone at both ends before the next request: no stale reuse to fail"),
		c, r,
		exact(Retries, 0, "nothing fails, nothing is retried"),
		exact(HiddenRetries, 0, "nothing fails, nothing is re-sent"))
	return out
}

// quicUnpredictable says why an HTTP/3 run's counts depend on more than the oracle's idle
// rule, or "".
func quicUnpredictable(p Plan) string {
	switch {
	case p.Client.Real != "":
		return fmt.Sprintf("a real client (%s): its own rules decide, the truth suite compares them with the model", p.Client.Real)
	case p.Concurrency > 1 || p.OpenModel:
		return "HTTP/3 multiplexes concurrent requests on one connection; the oracle predicts a sequential run's connections"
	case p.Middlebox != nil:
		return "a box on the QUIC path: a forgotten flow rebinds or drops, and which requests it meets depends on PINGs and loss recovery the oracle does not model"
	case p.QUIC.Lossy:
		return "a lossy link: QUIC's loss recovery decides when packets arrive, and with it the idle clocks"
	case p.Server.Delay > 0:
		return "a delayed response: the idle clock restarts at packets the oracle does not place"
	}
	return ""
}

func fmtIdle(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}
