package oracle

import (
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
)

// QUIC is an HTTP/3 run's transport: both ends' max_idle_timeout (0: none advertised) and
// what the path does to datagrams.
type QUIC struct {
	ServerIdle, ClientIdle time.Duration
	// Lossy: the link drops datagrams (network.loss), and loss recovery's timers decide
	// what the idle clock sees.
	Lossy bool
	// KeepAlivePeriod is the client's keep-alive PING period (client.quic.keepalive_period;
	// 0: no PINGs). MaxAckDelay is the server's max_ack_delay (quic-go's default, 25 ms of
	// real time), in scenario time: the client's PTO, which can stretch the PING interval,
	// includes it.
	KeepAlivePeriod, MaxAckDelay time.Duration
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
	if p.QUIC.KeepAlivePeriod > 0 && idle > 0 {
		return quicPinged(p, idle, lateness)
	}
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

// quicPinged predicts a run whose client sends keep-alive PINGs. quic-go (v0.65.0
// connection.go) sends one when nothing was received for keepAliveInterval =
// min(KeepAlivePeriod, idleTimeout/2) (applyTransportParameters, the negotiated timeout),
// stretched to at least 1.5 PTO (nextKeepAliveTime); the PING restarts the client's idle
// clock when sent and the server's when it arrives, and its ACK is back one round trip
// later. So when that interval plus a round trip stays inside the idle timeout, no pause
// ends the connection: one connection carries every request. Where the PTO could stretch
// the interval past that, the count depends on QUIC's RTT estimate and is not predicted.
func quicPinged(p Plan, idle, lateness time.Duration) Prediction {
	interval := min(p.QUIC.KeepAlivePeriod, idle/2)
	// The PTO is smoothed RTT + 4 RTT variation + max_ack_delay; after the first sample the
	// variation is half the sample (RFC 9002 5.3), and it only shrinks on a steady link:
	// 3 round trips (jitter counted at its widest) bounds it.
	pto := 3*(p.RTT+2*p.Jitter) + p.QUIC.MaxAckDelay + time.Millisecond
	stretched := max(interval, pto*3/2)
	margin := p.RTT + 2*p.Jitter + lateness
	why := fmt.Sprintf("the client sends a keep-alive PING after %s without a packet (min of keepalive_period %s and half the negotiated idle timeout %s), inside the idle timeout with its round trip: no pause ends the connection",
		interval, p.QUIC.KeepAlivePeriod, fmtIdle(idle))
	if stretched+margin >= idle {
		return notPredicted(singleHop, fmt.Sprintf("keep-alive PINGs every %s or, stretched to 1.5 PTO, up to %s, with the round trip too close to the negotiated idle timeout %s: whether a PING keeps the connection depends on QUIC's RTT estimate", interval, stretched, fmtIdle(idle)), lateness)
	}
	out := Prediction{Rule: "quic-ping", LatenessMs: ms(lateness)}
	out.Counts = append(out.Counts,
		exact(Errors, 0, "a QUIC connection kept alive by PINGs is never closed under a request"),
		exact(Connections, 1, why),
		exact(ReusedRequests, p.Requests-1, "every request after the first reuses the one connection"),
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
