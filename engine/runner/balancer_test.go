package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/kalab-dev/kalab/engine/predict"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// racePrediction works out, from a balancer run's plan alone, which pauses put a request
// at the server after its idle close while the balancer still believes the connection is
// open: p + front RTT inside (close - backend RTT, close). It also counts the pauses past
// the window (the FIN is back: a new backend connection, no error), and the smallest
// distance of any pause from either edge, in real time.
func racePrediction(st scenario.Settings) (inside, after int, margin time.Duration) {
	inside, after, margin = chainRace(st, st.Server.IdleTimeout.D(), st.Balancer.BackendNetwork.RTT.D(), st.Network.RTT.D())
	return inside, after, shape.Scale(st.TimeScale).D(scenario.Duration(margin))
}

// variants maps the runs of p's first scenario by their variant's name.
func variants(p *scenario.Plan) map[string]*scenario.Run {
	runs := map[string]*scenario.Run{}
	for _, r := range p.Scenarios[0].Runs {
		runs[r.Variant] = r
	}
	return runs
}

// expectSources is r's expect checks as written, one a line.
func expectSources(r *scenario.Run) string {
	var all []string
	for _, a := range r.Expect {
		all = append(all, a.Source)
	}
	return strings.Join(all, "\n")
}

// The bundled ALB scenario's counts are the geometry's, not a band: recompute them from
// the plan and find them in the file's checks.
func TestALBScenarioPrediction(t *testing.T) {
	t.Parallel()
	runs := variants(bundled(t, "12-alb-backend-race.yaml"))
	st := runs["alb-node"].Settings
	// The oracle's counts, judged at 40 ms of scenario time (20 ms real at the file's 0.5):
	// no pause may lie that close to a window edge, or the verdict would hang on timer
	// lateness.
	pred := oracle.Predict(predict.Plan(st), 40*time.Millisecond)
	count := func(metric string) int {
		c, ok := pred.Count(metric)
		if !ok || !c.Predicted {
			t.Fatalf("the oracle does not predict %s: %s", metric, c.Reason)
		}
		if c.Lo != c.Hi {
			t.Errorf("%s: a pause is within 20 ms of real time of a window edge (requests %v): the verdict would hang on timer lateness", metric, c.Uncertain)
		}
		return c.Value
	}
	inside, backend := count(oracle.Status5xx), count(oracle.BackendConnections)
	if inside == 0 {
		t.Fatal("no pause falls in the race window: the scenario shows nothing")
	}
	// The oracle and the test's own geometry must agree (two derivations of one window).
	if in, aft, _ := racePrediction(st); in != inside || 1+in+aft != backend {
		t.Errorf("the oracle predicts %d races and %d backend connections; the geometry %d and %d", inside, backend, in, 1+in+aft)
	}
	for _, want := range []struct{ variant, expr string }{
		{"alb-node", fmt.Sprintf("status_5xx == %d", inside)},
		{"alb-node", fmt.Sprintf("backend_errors == %d", inside)},
		{"alb-node", fmt.Sprintf("backend_connections == %d", backend)},
		{"nginx-get", fmt.Sprintf("balancer_retries == %d", inside)},
		{"nginx-post", fmt.Sprintf("status_5xx == %d", inside)},
	} {
		if !strings.Contains(expectSources(runs[want.variant]), want.expr) {
			t.Errorf("variant %s does not check %q (the geometry predicts it)", want.variant, want.expr)
		}
	}
	// The same file must give the same counts at any --time-scale.
	for _, scale := range []float64{0.5, 1} {
		at := st
		at.TimeScale = scale
		p := oracle.Predict(predict.Plan(at), 0)
		in, _ := p.Count(oracle.Status5xx)
		bc, _ := p.Count(oracle.BackendConnections)
		if in.Value != inside || bc.Value != backend {
			t.Errorf("at --time-scale %v the oracle predicts %d races and %d backend connections, at the file's scale %d and %d", scale, in.Value, bc.Value, inside, backend)
		}
	}
	if c, _ := oracle.Predict(predict.Plan(runs["alb-backend-65s"].Settings), 0).Count(oracle.Status5xx); c.Value != 0 {
		in := c.Value
		// 65 s closes never come inside a 6 s pause: the fix must predict 0 by construction.
		t.Errorf("the fixed variant predicts %d races", in)
	}
}

// End to end on the virtual clock: client -> link -> balancer -> link -> server, with a
// backend that closes at 600 ms and pauses placed inside and outside the race window. No
// timer is late, so the counts are the geometry's exactly.
func TestBalancerTopologyEndToEnd(t *testing.T) {
	t.Parallel()
	const src = `
name: two-hop
network: {rtt: 20ms}
server: {idle_timeout: 600ms}
balancer:
  preset: aws-alb
  backend_network: {rtt: 160ms}
load: {requests: 20, burst: 2, pause: 400ms..660ms, seed: %d}
variants:
  - name: alb
  - name: nginx
    balancer: {preset: nginx-proxy}
`
	// The first seed whose pauses keep 1 ms from both window edges (none on an edge, where
	// the order of two events at the same instant would decide), with some inside and some
	// after the window.
	var p *scenario.Plan
	var inside, after int
	for seed := 1; p == nil; seed++ {
		if seed > 500 {
			t.Fatal("no seed keeps its pauses clear of the window edges")
		}
		cand := plan(t, fmt.Sprintf(src, seed))
		in, aft, m := racePrediction(cand.Scenarios[0].Runs[0].Settings)
		if m >= time.Millisecond && in >= 2 && aft >= 1 {
			p, inside, after = cand, in, aft
		}
	}
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every line, the balancer's metrics and request fields included, fits the result schema.
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
	got := map[string]*report.Run{}
	for _, r := range out.Runs {
		got[r.Variant] = r
	}
	alb, ngx := got["alb"].Metrics, got["nginx"].Metrics
	if got["alb"].Status == report.StatusError || got["nginx"].Status == report.StatusError {
		t.Fatalf("runs ended in error: %s / %s", got["alb"].Error, got["nginx"].Error)
	}
	// A request answered on its first backend attempt costs exactly its round trips: the
	// request's own on each hop (20 ms + 160 ms = 180 ms), plus the SYN's on each hop it
	// opens a connection on (20 ms in front, 160 ms behind the balancer).
	for _, v := range []string{"alb", "nginx"} {
		if got[v].Clock != scenario.ClockVirtual {
			t.Errorf("%s ran on the %q clock, want virtual", v, got[v].Clock)
		}
		for _, rq := range readRequests(t, filepath.Join(out.Dir, got[v].RequestsFile)) {
			if rq.Status != 200 || rq.BackendAttempts != 1 {
				continue
			}
			want := 180.0
			if !rq.Reused {
				want += 20
			}
			if !rq.BackendReused {
				want += 160
			}
			if rq.LatencyMs != want {
				t.Errorf("%s request %d (reused %v, backend reused %v): %v ms, want %v", v, rq.Seq, rq.Reused, rq.BackendReused, rq.LatencyMs, want)
			}
		}
	}
	if alb.Status5xx != float64(inside) || alb.BalancerErrors != float64(inside) || alb.BackendConnections != float64(1+inside+after) {
		t.Errorf("alb: status_5xx %v, balancer_errors %v, backend_connections %v; the geometry predicts %d, %d, %d",
			alb.Status5xx, alb.BalancerErrors, alb.BackendConnections, inside, inside, 1+inside+after)
	}
	if ngx.Status5xx != 0 || ngx.BalancerRetries != float64(inside) {
		t.Errorf("nginx: status_5xx %v, balancer_retries %v; want 0 and %d", ngx.Status5xx, ngx.BalancerRetries, inside)
	}
	if alb.ServerConnections != alb.BackendConnections || alb.BackendProxyConnections != alb.BackendConnections || alb.ProxyConnections != 1 || alb.Connections != 1 {
		t.Errorf("connection counts disagree across hops: %+v", alb)
	}
	// Every request record names its backend connection; the 502s name a reused one.
	n502 := 0
	for _, rq := range readRequests(t, filepath.Join(out.Dir, got["alb"].RequestsFile)) {
		if rq.BackendConn == 0 || rq.BackendAttempts != 1 {
			t.Errorf("request %d: backend conn %d, attempts %d", rq.Seq, rq.BackendConn, rq.BackendAttempts)
		}
		if rq.Status == 502 {
			n502++
			if !rq.BackendReused {
				t.Errorf("request %d: a 502 on a backend connection that was not reused", rq.Seq)
			}
		}
	}
	if n502 != inside {
		t.Errorf("%d request records with 502, want %d", n502, inside)
	}
}

func readRequests(t *testing.T, path string) []report.Request {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []report.Request
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rq report.Request
		if err := json.Unmarshal(sc.Bytes(), &rq); err != nil {
			t.Fatal(err)
		}
		out = append(out, rq)
	}
	return out
}
