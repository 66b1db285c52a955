package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/predict"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// chainRace counts the seeded pauses of st against the race window of one link of a
// chain, in scenario time: a link closed from its far end after close of idle, one backend
// round trip back wide, and crossed by inFront of round trips before the link (the
// client's and the links in front of it). It returns the pauses inside the window, those
// past it (a fresh connection each), and the smallest distance of a pause to an edge.
func chainRace(st scenario.Settings, close, back, inFront time.Duration) (inside, after int, margin time.Duration) {
	lo, hi := close-back-inFront, close-inFront
	margin = time.Hour
	for _, p := range predict.Plan(st).Pauses {
		switch {
		case p > lo && p < hi:
			inside++
		case p >= hi:
			after++
		}
		margin = min(margin, (p - lo).Abs(), (p - hi).Abs())
	}
	return inside, after, margin
}

// The bundled ALB -> Envoy -> application chain: its counts are the geometry's of the
// link that closes (Envoy's to the application, crossed after the client's 20 ms and the
// ALB's 2 ms), the oracle's, and the file's checks, all three the same.
func TestBalancerChainScenarioPrediction(t *testing.T) {
	t.Parallel()
	runs := variants(bundled(t, "24-alb-envoy-app.yaml"))
	st := runs["envoy-node"].Settings
	bs := st.Balancers()
	in, after, margin := chainRace(st, st.Server.IdleTimeout.D(), bs[1].BackendNetwork.RTT.D(), st.Network.RTT.D()+bs[0].BackendNetwork.RTT.D())
	if in == 0 || margin < 100*time.Millisecond {
		t.Fatalf("%d pauses in the race window, the closest %v from an edge: the file shows nothing, or its verdict hangs on timer lateness", in, margin)
	}
	t.Logf("%d races, %d pauses past the close, the closest pause %v from an edge", in, after, margin)
	pred := oracle.Predict(predict.Plan(st), 40*time.Millisecond)
	for metric, want := range map[string]int{oracle.Status5xx: in, oracle.BackendErrors: in, oracle.BalancerErrors: in,
		oracle.BackendConnections: 1 + (1 + in + after)} {
		c, ok := pred.Count(metric)
		if !ok || !c.Predicted || c.Lo != c.Hi || c.Value != want {
			t.Errorf("the oracle's %s: %+v, want exactly %d (the geometry)", metric, c, want)
		}
	}
	for _, want := range []string{fmt.Sprintf("status_5xx == %d", in), fmt.Sprintf("backend_errors == %d", in),
		fmt.Sprintf("backend_connections == %d", 2+in+after)} {
		if !strings.Contains(expectSources(runs["envoy-node"]), want) {
			t.Errorf("envoy-node does not check %q (the geometry predicts it)", want)
		}
	}
}

// A chain of three balancers whose tightest edge is the middle link, then the last: the
// link that may close decides, its balancer answers with its own status, the others pass
// the answer on, and the errors move with the edge as the geometry says. Each count is
// the geometry's, the oracle's and the run's; each balancer's own answers are in its hop.
func TestBalancerChainTightestLinkDecides(t *testing.T) {
	t.Parallel()
	src := `
name: chain
network: {rtt: 20ms}
client: {preset: node-agent}
load: {requests: 60, burst: 4, pause: 5.2s..6.4s, seed: 995}
variants:
  - name: middle          # tier 2's idle close is the tightest edge: tier 1 answers 504
    server: {idle_timeout: 65s}
    balancer:
      - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 502, backend_network: {rtt: 2ms}}
      - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 504, backend_network: {rtt: 400ms}}
      - {idle_timeout: 6s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 503, backend_network: {rtt: 3ms}}
  - name: last            # the server's idle close is: tier 2 answers 503
    server: {idle_timeout: 6s}
    balancer:
      - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 502, backend_network: {rtt: 2ms}}
      - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 504, backend_network: {rtt: 3ms}}
      - {idle_timeout: 65s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 503, backend_network: {rtt: 400ms}}
  - name: two-edges       # both: not predicted
    server: {idle_timeout: 6s}
    balancer:
      - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 502, backend_network: {rtt: 2ms}}
      - {idle_timeout: 60s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 504, backend_network: {rtt: 400ms}}
      - {idle_timeout: 6s, backend: {keepalive: true, idle_timeout: 60s, liveness_check: true}, error_status: 503, backend_network: {rtt: 400ms}}
`
	p := plan(t, src)
	type want struct {
		in, after, answerer int
		status              float64
	}
	wants := map[string]want{}
	for _, r := range p.Scenarios[0].Runs {
		st := r.Settings
		bs := st.Balancers()
		var w want
		switch r.Variant {
		case "middle":
			w.in, w.after, _ = chainRace(st, bs[2].IdleTimeout.D(), bs[1].BackendNetwork.RTT.D(), st.Network.RTT.D()+bs[0].BackendNetwork.RTT.D())
			w.answerer, w.status = 1, 504
		case "last":
			w.in, w.after, _ = chainRace(st, st.Server.IdleTimeout.D(), bs[2].BackendNetwork.RTT.D(),
				st.Network.RTT.D()+bs[0].BackendNetwork.RTT.D()+bs[1].BackendNetwork.RTT.D())
			w.answerer, w.status = 2, 503
		case "two-edges":
			c, _ := oracle.Predict(predict.Plan(st), 0).Count(oracle.Status5xx)
			if c.Predicted || !strings.Contains(c.Reason, "two links may close") {
				t.Errorf("two-edges: the oracle's status_5xx %+v, want not predicted: two links may close", c)
			}
			continue
		}
		if w.in == 0 {
			t.Fatalf("%s: no pause falls in the race window: the test shows nothing", r.Variant)
		}
		wants[r.Variant] = w
		pred := oracle.Predict(predict.Plan(st), 0)
		for metric, n := range map[string]int{oracle.Status5xx: w.in, oracle.BalancerErrors: w.in, oracle.BackendConnections: 2 + 1 + w.in + w.after} {
			if c, _ := pred.Count(metric); !c.Predicted || c.Value != n {
				t.Errorf("%s: the oracle's %s %+v, want %d (the geometry)", r.Variant, metric, c, n)
			}
		}
	}
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		w, ok := wants[r.Variant]
		if !ok {
			continue
		}
		m := r.Metrics
		exactPredictions(t, r)
		if r.Status != report.StatusPass || m.Errors != 0 || m.Status5xx != float64(w.in) || m.BackendConnections != float64(3+w.in+w.after) {
			t.Errorf("%s: %s %s, errors %.0f, status_5xx %.0f, backend_connections %.0f; want 0, %d, %d",
				r.Variant, r.Status, r.Error, m.Errors, m.Status5xx, m.BackendConnections, w.in, 3+w.in+w.after)
		}
		var tiers []report.Hop
		for _, h := range r.Hops {
			if h.Role == "balancer" {
				tiers = append(tiers, h)
			}
		}
		if len(tiers) != 3 {
			t.Fatalf("%s: %d balancer hops in the record, want 3", r.Variant, len(tiers))
		}
		for i, h := range tiers {
			n := 0.0
			if i == w.answerer {
				n = float64(w.in)
			}
			if h.Stats["balancer_errors"] != n {
				t.Errorf("%s: balancer %d answered %.0f requests itself, want %.0f", r.Variant, i+1, h.Stats["balancer_errors"], n)
			}
		}
		got := map[int]int{}
		var first int // the first request answered 5xx
		for _, rq := range readRequests(t, filepath.Join(out.Dir, r.RequestsFile)) {
			got[rq.Status]++
			if rq.Status >= 500 && first == 0 {
				first = rq.Seq
			}
		}
		// explain names the balancer that answered, from the hops' own counts, and puts the
		// pause inside the window of the link from it.
		run, err := explain.Load(out.Dir, "chain/"+r.Variant)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := explain.Request(run, first)
		name := fmt.Sprintf("balancer %d", w.answerer+1)
		if !strings.Contains(text, "Only "+name+" answered requests itself") || !strings.Contains(text, name+"'s connection to") ||
			!strings.Contains(text, "inside the race window") {
			t.Errorf("%s: explain says of request %d:\n%s\nwant %s named as the one that answered, the pause inside its link's window", r.Variant, first, text, name)
		}
		if got[int(w.status)] != w.in || len(got) != 2 {
			t.Errorf("%s: statuses %v, want %d of %.0f (balancer %d's own) and the rest 200", r.Variant, got, w.in, w.status, w.answerer+1)
		}
	}
}

// The bundled NLB -> ingress-nginx -> pod file: its counts are the geometry's of the
// client's hop, whose tightest edge decides. Every pause (5-20 min) outlasts the ingress's
// default 75 s, so each burst opens a connection; a pause past the NLB's 350 s and its poll
// (a hundredth of the timeout) expires the flow, which at a keep-alive of 3600 s the next
// request meets as a reset. No pause may lie within a poll of the expiry.
func TestNLBIngressScenario(t *testing.T) {
	t.Parallel()
	runs := variants(bundled(t, "25-nlb-ingress-pod.yaml"))
	st := runs["ingress-3600s"].Settings
	plan := predict.Plan(st)
	if plan.Middlebox == nil {
		t.Fatal("the file's plan has no middlebox")
	}
	nlb := plan.Middlebox.IdleTimeout
	expired, short := 0, 0
	for _, g := range plan.Pauses {
		switch {
		case g >= nlb && g < nlb+plan.Middlebox.Poll:
			t.Fatalf("a pause of %v lies within the NLB's poll (%v) of its %v: which poll notices is not fixed", g, plan.Middlebox.Poll, nlb)
		case g >= nlb+plan.Middlebox.Poll:
			expired++
		}
		if g <= runs["ingress-75s"].Settings.Balancer.IdleTimeout.D() {
			short++
		}
	}
	if expired == 0 || short != 0 {
		t.Fatalf("%d pauses expire the NLB's flow, %d are within the ingress's 75 s: the file shows nothing", expired, short)
	}
	for _, want := range []struct{ variant, expr string }{
		{"ingress-75s", fmt.Sprintf("connections == %d && middlebox_expired == %d", 1+len(plan.Pauses), expired)},
		{"ingress-3600s", fmt.Sprintf("errors_by_class.reset == %d && errors == %d && connections == %d && middlebox_expired == %d", expired, expired, 1+expired, expired)},
	} {
		if !strings.Contains(expectSources(runs[want.variant]), want.expr) {
			t.Errorf("%s does not check %q (the geometry predicts it)", want.variant, want.expr)
		}
	}
}
