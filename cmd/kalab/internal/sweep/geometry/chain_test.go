package geometry

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// chainFile is a path of three boxes from the client, each with its own idle timeout: an
// AWS NLB (350 s, a reset to the next segment), kube-proxy's IPVS table (900 s, drop) and a
// firewall that forgets a flow idle for 120 s (drop), the tightest, last on the path. The
// server never closes an idle connection; requests' pool keeps every connection. In
// nlb-tight the NLB forgets at 100 s and the firewall at 600 s: the tightest is the first
// box. Each box polls its flows every 100 ms (a hundredth of its timeout, at most 100 ms).
const chainFile = `
name: chain
server: {idle_timeout: none}
client: {preset: python-requests, timeout: 30s}
middlebox:
  - {preset: aws-nlb}
  - {preset: kube-ipvs}
  - {idle_timeout: 120s, on_expiry: drop}
load: {requests: 24, burst: 2, pause: 1m..8m, seed: 7}
variants:
  - name: fw-last
  - name: nlb-tight
    middlebox:
      - {preset: aws-nlb, idle_timeout: 100s}
      - {preset: kube-ipvs}
      - {idle_timeout: 600s, on_expiry: drop}
  - name: short
    load: {pause: 1m..5m}
  - name: short-server-200s
    server: {idle_timeout: 200s}
    load: {pause: 1m..5m}
  - name: outlast
    network: {rtt: 100ms}
    load: {pause: 130s..5m}
  - name: within
    network: {rtt: 100ms}
    load: {pause: 1m..110s}
`

const poll = 100 * time.Millisecond

var seeds = []int64{7, 8, 9, 10}

func settings(t *testing.T, variant string) scenario.Settings {
	t.Helper()
	for _, r := range plantest.Load(t, chainFile).Scenarios[0].Runs {
		if r.Variant == variant {
			return r.Settings
		}
	}
	t.Fatalf("no variant %s", variant)
	return scenario.Settings{}
}

// drawn are the seeds' pauses, as the runs draw them; a pause within one poll after a box's
// timeout (where which poll notices is not fixed) fails the test: choose other seeds.
func drawn(t *testing.T, st scenario.Settings, timeouts ...time.Duration) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, seed := range seeds {
		spec := configure.Load(st, 1)
		spec.Seed = seed
		for _, g := range load.Pauses(spec) {
			for _, e := range timeouts {
				if g >= e && g < e+poll {
					t.Fatalf("a pause of %v ends within one poll of a box's %v", g, e)
				}
			}
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// firstFrom is the shortest pause at or beyond e plus one poll: the first a box with idle
// timeout e has surely forgotten.
func firstFrom(ps []time.Duration, e time.Duration) float64 {
	for _, g := range ps {
		if g >= e+poll {
			return g.Seconds()
		}
	}
	return math.Inf(1)
}

// The client's idle timeout behind a chain: safe up to the first pause the tightest box
// forgets, which meets that box (the first on the path that forgot the flow): the firewall
// (120 s, third), or with the NLB at 100 s the NLB (first on the path). Flipping the
// tightest box moves the edge and the box named.
func TestChainClientIdleNamesTheTightestBox(t *testing.T) {
	t.Parallel()
	const fw = "box 3 of 3 (idle timeout 2m0s, drop)"
	const nlb = "box 1 of 3 (aws-nlb, 1m40s, reset)"
	for _, c := range []struct {
		variant, box, fate string
		idle               time.Duration
	}{
		{"fw-last", fw, "drops the request (it hangs until the client's timeout)", 120 * time.Second},
		{"nlb-tight", nlb, "answers the request with a reset", 100 * time.Second},
	} {
		st := settings(t, c.variant)
		ps := drawn(t, st, 100*time.Second, 120*time.Second, 350*time.Second, 600*time.Second, 900*time.Second)
		first := firstFrom(ps, c.idle)
		if first >= 350 {
			t.Fatalf("%s: the first pause the tightest box forgets, %v s, is past the NLB's 350 s: choose other seeds", c.variant, first)
		}
		p := Predict("client.idle_timeout", st, seeds)
		want := c.box + " forgets first: it forgets a flow idle for " + Seconds(c.idle.Seconds()) + " (within one 100ms poll), then " + c.fate +
			"; a client idle timeout at or below " + Seconds(c.idle.Seconds()) + " gives the connection up before, so it never sends into a forgotten flow" +
			"; with these seeds' pauses the first to fail is a pause of " + Seconds(first) + ": " + c.box + " has forgotten the flow and " + c.fate
		if p == nil || p.Rule != want || p.Bound != c.idle.Seconds() || !slices.Equal(p.Edges, []float64{first}) {
			t.Errorf("%s: %+v;\nwant rule %q, bound %v, edges [%v]", c.variant, p, want, c.idle.Seconds(), first)
		}
	}
	a, b := Predict("client.idle_timeout", settings(t, "fw-last"), seeds), Predict("client.idle_timeout", settings(t, "nlb-tight"), seeds)
	if a == nil || b == nil || a.Edges[0] == b.Edges[0] {
		t.Errorf("the seeds draw no pause between 100 s and 120 s: the flip does not move the edge")
	}
}

// A box's idle timeout T when no other box forgets the pauses: unsafe from 0 (a box that
// never forgets is safe) to the longest pause, safe above; when another box forgets one
// of them, no T passes and that box is named.
func TestChainBoxIdle(t *testing.T) {
	t.Parallel()
	st := settings(t, "short")
	ps := drawn(t, st, 120*time.Second, 350*time.Second)
	longest := ps[len(ps)-1].Seconds()
	p := Predict("middlebox.2.idle_timeout", st, seeds)
	want := "box 3 of 3 (drop, its idle timeout swept) forgets first while its idle timeout T is below the longest of these seeds' pauses that reuse a connection, " +
		Seconds(longest) + ": it forgets the flow within one poll after T (T/100, 1ms to 100ms), then drops the request (it hangs until the client's timeout)" +
		"; no other box forgets these pauses (box 1 of 3 (aws-nlb, 5m50s, reset), box 2 of 3 (kube-ipvs, 15m0s, drop)); a T at or above " + Seconds(longest) + " forgets none"
	if p == nil || p.Rule != want || !slices.Equal(p.Edges, []float64{0, longest}) || p.Bound != 300 {
		t.Errorf("middlebox.2: %+v;\nwant rule %q, edges [0 %v], bound 300 (the range's longest pause)", p, want, longest)
	}

	first := firstFrom(ps, 120*time.Second)
	p = Predict("middlebox.0.idle_timeout", st, seeds)
	want = "box 3 of 3 (idle timeout 2m0s, drop) decides whatever the idle timeout of box 1 of 3 (aws-nlb, reset, its idle timeout swept): a pause of " + Seconds(first) +
		" outlasts it (2m0s, within one 100ms poll), and the box drops the request (it hangs until the client's timeout), unless a box before it on the path forgot the flow too and meets the request first; so no value of the swept box's idle timeout passes"
	if p == nil || p.Rule != want || !slices.Equal(p.Edges, []float64{0}) {
		t.Errorf("middlebox.0: %+v;\nwant rule %q, edges [0]", p, want)
	}

	// Behind a server that closes at 200 s the FIN tells the client of a longer pause
	// unless the box forgot first: the edge is the server's idle timeout.
	p = Predict("middlebox.2.idle_timeout", settings(t, "short-server-200s"), seeds)
	if longest <= 200 || p == nil || !slices.Equal(p.Edges, []float64{0, 200}) || p.Bound != 200 {
		t.Errorf("behind a 200 s server: %+v; want edges [0 200], bound 200 (longest pause %v)", p, longest)
	}
	if p := Predict("middlebox.idle_timeout", st, seeds); p != nil {
		t.Errorf("middlebox.idle_timeout over a chain has a geometry: %+v", p)
	}
	if p := Predict("middlebox.3.idle_timeout", st, seeds); p != nil {
		t.Errorf("a fourth box of three has a geometry: %+v", p)
	}
}

// The server's idle timeout S behind the chain: when every pause outlasts the firewall,
// from S = 120 s + one poll the box forgets before the FIN passes (the band is open above)
// and below it the FIN tells the client first; when no pause reaches the boxes, S races a
// pause g in (g, g + RTT) as behind no box.
func TestChainServerIdle(t *testing.T) {
	t.Parallel()
	p := Predict("server.idle_timeout", settings(t, "outlast"), seeds)
	want := "a server idle timeout S races a pause g when S − 100ms < g < S (RTT 100ms), as behind no box, while no box has forgotten the flow by g" +
		"; box 3 of 3 (idle timeout 2m0s, drop) forgets first from S = 2m0.1s (a flow idle 2m0s, within one 100ms poll): it forgets the flow before the server's FIN passes it, the FIN is lost, " +
		"and a request after a pause that outlasts the box meets the forgotten flow (44 of these seeds' pauses do); below 2m0s the FIN tells the client first"
	if p == nil || p.Rule != want || !slices.Equal(p.Edges, []float64{120.1}) || p.Bound != 120.1 {
		t.Errorf("outlast: %+v;\nwant rule %q, edges [120.1], bound 120.1", p, want)
	}
	st := settings(t, "within")
	ps := drawn(t, st)
	p = Predict("server.idle_timeout", st, seeds)
	if p == nil || len(p.Edges)%2 != 0 || p.Edges[0] != ps[0].Seconds() || p.Edges[len(p.Edges)-1] != ps[len(ps)-1].Seconds()+0.1 {
		t.Errorf("within: %+v; want bands from the shortest pause %v to the longest plus the RTT %v", p, ps[0], ps[len(ps)-1]+100*time.Millisecond)
	}
}

func TestBoxParam(t *testing.T) {
	t.Parallel()
	for param, want := range map[string]string{
		"middlebox.2.idle_timeout":  "2 idle_timeout true true",
		"middlebox.idle_timeout":    "0 idle_timeout false true",
		"middlebox.-1.idle_timeout": "-1 idle_timeout true true",
		"client.idle_timeout":       "0  false false",
	} {
		n, f, indexed, ok := BoxParam(param)
		if got := fmt.Sprint(n, " ", f, " ", indexed, " ", ok); got != want {
			t.Errorf("%s: %q, want %q", param, got, want)
		}
	}
}

// The sweep's context names the boxes in path order, the swept one's timeout as swept.
func TestBoxesDescribesThePath(t *testing.T) {
	t.Parallel()
	got := Boxes(settings(t, "fw-last"), "middlebox.2.idle_timeout")
	if want := "middleboxes aws-nlb 5m50s reset -> kube-ipvs 15m0s drop -> swept drop"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
