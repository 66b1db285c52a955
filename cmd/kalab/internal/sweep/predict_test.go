package sweep

import (
	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/target"
	"math"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"
	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

func baseRun(t *testing.T, file, run, param string) *target.Target {
	t.Helper()
	tg, err := target.Open(plantest.Bundled(file), param, run, "", true)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// File 04 documents its geometry: the race window is (idle - RTT, idle) = (1.85 s, 2 s),
// and seed 4 puts 5 of its pauses in (1.85 s, 1.9 s).
func TestPredictStaleRace(t *testing.T) {
	t.Parallel()
	tg := baseRun(t, "04-stale-race.yaml", "node-agent", "client.idle_timeout")
	p := geometry.Predict("client.idle_timeout", tg.Base.Settings, []int64{4})
	if p == nil {
		t.Fatal("no prediction for the stale race")
	}
	if math.Abs(p.Bound-1.85) > 1e-9 {
		t.Errorf("bound %v; want server idle 2 s - RTT 150 ms = 1.85 s", p.Bound)
	}
	if len(p.Edges) != 1 || p.Edges[0] <= 1.85 || p.Edges[0] >= 1.9 {
		t.Errorf("edges %v; want the first racing pause of seed 4, inside (1.85 s, 1.9 s)", p.Edges)
	}
	if geometry.Predict("client.max_idle", tg.Base.Settings, []int64{4}) != nil {
		t.Error("a prediction for a parameter the race does not turn on")
	}
}

// inside reports whether v falls in one of the unsafe spans (edges in pairs).
func inside(edges []float64, v float64) bool {
	for i := 0; i+1 < len(edges); i += 2 {
		if v > edges[i] && v < edges[i+1] {
			return true
		}
	}
	return false
}

// File 12: at the backend's 6 s close, seed 995 races 5 times (the file's alb-node); at 65 s
// (alb-backend-65s) nothing races; below the shortest pause nothing is reused.
func TestPredictBalancer(t *testing.T) {
	t.Parallel()
	tg := baseRun(t, "12-alb-backend-race.yaml", "alb-node", "server.idle_timeout")
	p := geometry.Predict("server.idle_timeout", tg.Base.Settings, []int64{995})
	if p == nil {
		t.Fatal("no prediction behind the balancer")
	}
	if !inside(p.Edges, 6) || inside(p.Edges, 65) || inside(p.Edges, 5) {
		t.Errorf("edges %v: want 6 s unsafe, 5 s and 65 s safe", p.Edges)
	}
	if math.Abs(p.Bound-(6.4+0.02+0.4)) > 1e-9 {
		t.Errorf("bound %v; want the longest pause 6.4 s + client RTT 20 ms + backend RTT 400 ms", p.Bound)
	}
	if last := p.Edges[len(p.Edges)-1]; last > p.Bound {
		t.Errorf("the last unsafe value %v is beyond the bound %v", last, p.Bound)
	}
}

// Behind an ALB the client's connections end at the balancer, which closes them idle at
// 60 s: the geometry of a client idle timeout is the balancer's idle less the client
// link's RTT, 60 s − 100 ms = 59.9 s, not the server's (120 s here, which governs only the
// balancer's backend pool), and its first race is the shortest pause of the seed inside
// (59.9 s, 60 s).
const lbClientIdle = `
name: lb-client-idle
network: {rtt: 100ms}
server: {idle_timeout: 120s}
client: {preset: node-agent}
balancer: {preset: aws-alb}
load: {requests: 40, burst: 4, pause: 59.8s..60.1s, seed: 7}
`

func TestPredictClientIdleBehindTheBalancer(t *testing.T) {
	t.Parallel()
	st := plantest.OnlyRun(t, plantest.Load(t, lbClientIdle)).Settings
	idle, rtt := time.Duration(st.Balancer.IdleTimeout), time.Duration(st.Network.RTT)
	first := time.Duration(math.MaxInt64)
	for _, p := range load.Pauses(configure.Load(st, 1)) {
		if p > idle-rtt && p < idle && p < first {
			first = p
		}
	}
	if first == time.Duration(math.MaxInt64) {
		t.Fatal("seed 7 draws no pause inside (59.9 s, 60 s): pick another seed")
	}
	p := geometry.Predict("client.idle_timeout", st, []int64{7})
	if p == nil {
		t.Fatal("no geometry for a client idle timeout behind the balancer")
	}
	want := "balancer idle − RTT = 1m0s − 100ms = 59.9s: the balancer's FIN takes RTT/2 back, the request RTT/2 out, " +
		"so a client idle timeout at or below it never sends into a close; with these seeds' pauses the first race is a pause of " + geometry.Seconds(first.Seconds())
	if p.Rule != want || p.Bound != (idle-rtt).Seconds() || len(p.Edges) != 1 || p.Edges[0] != first.Seconds() {
		t.Errorf("geometry %q, bound %v, edges %v;\nwant %q, bound %v, edges [%v]", p.Rule, p.Bound, p.Edges, want, (idle - rtt).Seconds(), first.Seconds())
	}
	if got, want := topology(st, "client.idle_timeout"), "server closes idle connections at 2m0s, RTT 100ms, balancer closes idle client connections at 1m0s, balancer pool idle 1m0s, backend RTT 0s, pauses 59.8s..1m0.1s"; got != want {
		t.Errorf("context %q; want %q", got, want)
	}
}

// Over HTTP/3 (file 17) the geometry is the negotiated idle timeout, never a race: no band
// (nothing races a close), the bound at the longest pause (15 s: a negotiated timeout above
// it keeps one connection), the other end's timeout named; with quic-go's PINGs the
// connection outlives any pause.
func TestPredictHTTP3SpeaksOfTheNegotiatedTimeout(t *testing.T) {
	t.Parallel()
	const neg = "over HTTP/3 nothing races a close: both ends apply the negotiated idle timeout, the smaller of the two ends' max_idle_timeout (RFC 9000 §10.1), here "
	const tail = ", and when it passes each drops the connection silently; a request after a longer pause opens a new connection (a handshake, not an error)"
	const pauses = "; the longest of these seeds' pauses is 15s: with a negotiated timeout above it (by a round trip, 50ms) one connection carries every request"
	for _, c := range []struct{ run, param, want string }{
		{"server-10s", "server.idle_timeout", neg + "min(S, the client's 30s)" + tail + pauses},
		{"server-10s", "client.idle_timeout", neg + "min(C, the server's 10s)" + tail + pauses},
	} {
		tg := baseRun(t, "17-h3-negotiated-idle.yaml", c.run, c.param)
		p := geometry.Predict(c.param, tg.Base.Settings, []int64{1, 2})
		if p == nil || p.Rule != c.want || len(p.Edges) != 0 || p.Bound != 15 {
			t.Errorf("%s: %+v;\nwant rule %q, no edges, bound 15", c.param, p, c.want)
		}
	}
	st := plantest.OnlyRun(t, plantest.Load(t, `
name: h3-pings
network: {rtt: 50ms}
server: {http: "3", idle_timeout: 20s}
client: {preset: quic-go-http3}
load: {requests: 12, burst: 3, pause: 15s}
`)).Settings
	p := geometry.Predict("client.idle_timeout", st, []int64{1})
	want := neg + "min(C, the server's 20s)" + tail + "; the client's keep-alive PINGs (after 10s without a packet, or half the negotiated timeout if less) keep the connection through any pause"
	if p == nil || p.Rule != want || len(p.Edges) != 0 || p.Bound != 0 {
		t.Errorf("PINGs: %+v;\nwant rule %q, no edges, bound 0", p, want)
	}
}
