// Package geometry is what the stale race's geometry predicts of a sweep's boundary: from a
// run's settings and its seeded pauses, the values of a parameter where a pause races a
// close or meets a flow a middlebox forgot (and which tier decides), and the regions of the
// range each verdict holds in.
package geometry

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/predict"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Prediction is what the geometry of the stale race says about a boundary, from the
// scenario's settings and the seeded pauses (the same draws the runs make).
type Prediction struct {
	// Rule says the geometry in one sentence, with the numbers it uses.
	Rule string `json:"rule"`
	// Bound is the value beyond which no pause of the range can race (seconds).
	Bound float64 `json:"bound"`
	// Edges are the values where, with these seeds' pauses, the predicted verdict changes
	// (seconds), in order.
	Edges []float64 `json:"edges"`
}

// Predict returns the geometry's boundary for sweeping param over the run's settings, or
// nil where it does not apply (more than one request in flight, no bursts, retries, a
// parameter the race does not turn on).
//
// The link delays every chunk, and a FIN, RTT/2 each way (engine/netsim). After a burst's
// last response reaches the client, the server (which wrote it RTT/2 earlier) closes at
// idle - RTT/2 and its FIN is back at the client at idle; the next request, sent after a
// pause p, reaches the server at p + RTT/2. It races when it leaves before the FIN arrives
// and lands after the close: idle - RTT < p < idle. Behind a balancer the client's
// connections end at the balancer, so for the client's idle timeout the same holds with
// the balancer's client-side idle timeout in place of the server's; for the server's idle
// timeout it holds for the balancer's pool, with the backend link's RTT and the pause
// lengthened by the client link's round trip. Behind middleboxes the tier that forgets or
// closes first decides (chain.go).
func Predict(param string, st scenario.Settings, seeds []int64) *Prediction {
	if st.Load.Burst <= 0 || st.Load.Concurrency > 1 || st.Client.Retry.Attempts > 0 || st.Load.Rate > 0 {
		return nil
	}
	pauses := map[int64][]float64{}
	for _, seed := range seeds {
		spec := load.Spec{Requests: st.Load.Requests, Concurrency: st.Load.Concurrency, Burst: st.Load.Burst,
			PauseMin: time.Duration(st.Load.Pause.Min), PauseMax: time.Duration(st.Load.Pause.Max), Seed: seed}
		for _, p := range load.Pauses(spec) {
			pauses[seed] = append(pauses[seed], p.Seconds())
		}
	}
	if st.Server.HTTP3() {
		return quicGeometry(param, st, pauses)
	}
	if len(st.Middleboxes()) > 0 {
		return behindBoxes(param, st, pauses)
	}
	sec := func(d scenario.Duration) float64 { return time.Duration(d).Seconds() }
	pmax := sec(st.Load.Pause.Max)
	switch {
	case param == "client.idle_timeout":
		who, idle := frontIdle(st)
		rtt := sec(st.Network.RTT)
		if idle <= 0 || pmax <= idle-rtt || sec(st.Load.Pause.Min) >= idle {
			return nil // no pause of the range can race: the geometry says nothing here
		}
		first := math.Inf(1)
		for _, ps := range pauses {
			for _, p := range ps {
				if p > idle-rtt && p < idle {
					first = math.Min(first, p)
				}
			}
		}
		pr := &Prediction{Bound: idle - rtt, Rule: fmt.Sprintf("%s idle − RTT = %s − %s = %s: the %s's FIN takes RTT/2 back, the request RTT/2 out, so a client idle timeout at or below it never sends into a close",
			who, Seconds(idle), Seconds(rtt), Seconds(idle-rtt), who)}
		if !math.IsInf(first, 1) {
			pr.Edges = []float64{first}
			pr.Rule += fmt.Sprintf("; with these seeds' pauses the first race is a pause of %s", Seconds(first))
		}
		return pr
	case param == "server.idle_timeout":
		return serverIdle(st, pauses, pmax)
	}
	return nil
}

// serverIdle is the geometry of the server's idle timeout: the race at what holds the
// server's connections (the client, the balancer's pool, or behind a chain the last
// balancer's pool), each pause lengthened by the round trips in front of it.
func serverIdle(st scenario.Settings, pauses map[int64][]float64, pmax float64) *Prediction {
	sec := func(d scenario.Duration) float64 { return time.Duration(d).Seconds() }
	bs := st.Balancers()
	switch {
	case len(bs) > 1:
		// Behind a chain the last balancer's pool races the server, its idle gap the pause
		// plus every round trip in front of it, when no link before it closes.
		if oracle.InnerLinksHold(predict.Plan(st)) != "" {
			return nil
		}
		offset := sec(st.Network.RTT)
		for _, b := range bs[:len(bs)-1] {
			offset += sec(b.BackendNetwork.RTT)
		}
		b := bs[len(bs)-1]
		return windows(pauses, offset, sec(b.BackendNetwork.RTT), sec(b.Backend.IdleTimeout), pmax, "last balancer")
	case len(bs) == 1:
		// The balancer's idle gap is the pause plus the client link's round trip.
		b := bs[0]
		return windows(pauses, sec(st.Network.RTT), sec(b.BackendNetwork.RTT), sec(b.Backend.IdleTimeout), pmax, "balancer")
	}
	return windows(pauses, 0, sec(st.Network.RTT), sec(st.Client.IdleTimeout), pmax, "client")
}

// frontIdle is the idle timeout that closes the client's own connections, and whose it is:
// the server's, or behind a balancer the balancer's client-side one (the client's
// connections end there; the server's timeout governs the balancer's backend pool). In
// seconds; 0 when nothing closes them.
func frontIdle(st scenario.Settings) (who string, idle float64) {
	if b := st.Balancer; b != nil {
		return "balancer", time.Duration(b.IdleTimeout).Seconds()
	}
	return "server", time.Duration(st.Server.IdleTimeout).Seconds()
}

// windows predicts a server idle timeout S: a gap g (pause plus offset) races when
// S - rtt < g < S, unless the pool dropped the connection first (g >= pool, pool > 0).
func windows(pauses map[int64][]float64, offset, rtt, pool, pmax float64, who string) *Prediction {
	type span struct{ lo, hi float64 }
	var spans []span
	for _, ps := range pauses {
		for _, p := range ps {
			g := p + offset
			if pool > 0 && g >= pool {
				continue
			}
			spans = append(spans, span{g, g + rtt})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	pr := &Prediction{Bound: pmax + offset + rtt}
	for i := 0; i < len(spans); {
		lo, hi := spans[i].lo, spans[i].hi
		for i++; i < len(spans) && spans[i].lo <= hi; i++ {
			hi = math.Max(hi, spans[i].hi)
		}
		pr.Edges = append(pr.Edges, lo, hi)
	}
	pr.Rule = fmt.Sprintf("a server idle timeout S races an idle gap g when S − %s < g < S (g: the pause%s; %s: the round trip from the %s to the server); the longest pause of the range, %s, is safe from S = %s",
		Seconds(rtt), plusOffset(offset, who), Seconds(rtt), who, Seconds(pmax), Seconds(pr.Bound))
	if pool > 0 {
		pr.Rule += fmt.Sprintf(", and any S above the %s's idle timeout of %s is safe whatever the pauses", who, Seconds(pool))
	}
	if n := len(pr.Edges); n > 0 {
		pr.Rule += fmt.Sprintf("; with these seeds' pauses S races from %s to %s", Seconds(pr.Edges[0]), Seconds(pr.Edges[n-1]))
	}
	return pr
}

func plusOffset(o float64, who string) string {
	switch {
	case o == 0:
		return ""
	case who == "last balancer":
		return " plus the round trips in front of the last balancer (the client's and the links between balancers), " + Seconds(o)
	}
	return " plus the client link's RTT, " + Seconds(o)
}

// Seconds writes seconds as a duration.
func Seconds(s float64) string {
	return time.Duration(math.Round(s * 1e9)).Round(time.Microsecond).String()
}

// quicGeometry is the geometry of an idle timeout over HTTP/3, where nothing races a close:
// both ends apply the negotiated idle timeout, the smaller of the two max_idle_timeouts (RFC
// 9000 section 10.1; quic-go connection.go applyTransportParameters), and when it passes
// each drops the connection without a packet, so a request after a longer pause opens a new
// connection instead of failing. Its bound is the longest of these seeds' pauses: from there
// one connection carries every request. The client's keep-alive PINGs (quic-go: after
// min(keepalive_period, idle/2) without a packet) keep the connection through any pause.
func quicGeometry(param string, st scenario.Settings, pauses map[int64][]float64) *Prediction {
	var name, who string
	var other scenario.Duration
	switch param {
	case "server.idle_timeout":
		name, who, other = "S", "client", st.Client.IdleTimeout
	case "client.idle_timeout":
		name, who, other = "C", "server", st.Server.IdleTimeout
	default:
		return nil
	}
	here := fmt.Sprintf("min(%s, the %s's %s)", name, who, other)
	if other == 0 {
		here = fmt.Sprintf("%s alone (the %s advertises none)", name, who)
	}
	pr := &Prediction{Rule: fmt.Sprintf("over HTTP/3 nothing races a close: both ends apply the negotiated idle timeout, the smaller of the two ends' max_idle_timeout (RFC 9000 §10.1), here %s, "+
		"and when it passes each drops the connection silently; a request after a longer pause opens a new connection (a handshake, not an error)", here)}
	if ka := time.Duration(st.Client.QUIC.KeepAlivePeriod); ka > 0 {
		pr.Rule += fmt.Sprintf("; the client's keep-alive PINGs (after %s without a packet, or half the negotiated timeout if less) keep the connection through any pause", ka)
		return pr
	}
	for _, ps := range pauses {
		for _, p := range ps {
			pr.Bound = math.Max(pr.Bound, p)
		}
	}
	pr.Rule += fmt.Sprintf("; the longest of these seeds' pauses is %s: with a negotiated timeout above it (by a round trip, %s) one connection carries every request", Seconds(pr.Bound), st.Network.RTT)
	return pr
}
