package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// deregisterSrc: ten GETs at once through an ALB, each held 2 s by the server
// (server.response.delay), so all ten are in flight from 0 to 2 s; a 3 s pause after the
// first burst's last response, then ten more. No network delay, and the server closes no
// idle connection within the run (60 s), so every instant is the plan's:
//
//   - control: no deregistration; the second burst reuses the ten backend connections.
//   - delay-0: the deregistration at 1 s completes at once: the old target is stopped with
//     the ten requests in flight, so ten 502s at 1,000 ms; the second burst (at 4 s) goes
//     on ten new backend connections, to the new target: 20 in all, 10 closed by the
//     deregistration.
//   - delay-short: a 500 ms delay ends at 1.5 s, still under the ten: ten 502s at 1,500 ms.
//   - delay-above: a 5 s delay; the ten finish at 2 s and their connections are not pooled
//     again, so the second burst (at 5 s) opens ten new ones (20); at 6 s the old target is
//     stopped with its ten idle connections open: 10 closes, no error.
//   - idle: the deregistration at 3 s, with a 3 s delay, finds the ten connections idle in
//     the pool: none is reused, though they are open, and the second burst opens ten (20);
//     the old target stops at 6 s, under nothing: 10 closes, no error.
//   - server-idle-first: the server closes each idle connection after 1 s, at 3 s, inside
//     the 5 s delay: those are idle closes, and the deregistration, left with no
//     connection, closes none.
const deregisterSrc = `
name: lb-deregister
clock: virtual
server: {idle_timeout: 60s, response: {delay: 2s}}
client: {preset: node-agent}
balancer: {preset: aws-alb, deregistration_delay: 5s}
load: {requests: 20, burst: 10, concurrency: 10, pause: 3s}
variants:
  - name: control
  - name: delay-0
    server: {events: [{do: deregister, at: 1s}]}
    balancer: {deregistration_delay: 0s}
  - name: delay-short
    server: {events: [{do: deregister, at: 1s}]}
    balancer: {deregistration_delay: 500ms}
  - name: delay-above
    server: {events: [{do: deregister, at: 1s}]}
  - name: idle
    server: {events: [{do: deregister, at: 3s}]}
    balancer: {deregistration_delay: 3s}
  - name: server-idle-first
    server: {idle_timeout: 1s, events: [{do: deregister, at: 1s}]}
`

// TestBalancerDeregistration: what a deregistration behind an ALB costs, with each count
// derived from the schedule above: 502s only when the delay ends with requests in flight,
// and never a request on a connection to the old target once it is deregistering.
func TestBalancerDeregistration(t *testing.T) {
	t.Parallel()
	out, err := Execute(context.Background(), plan(t, deregisterSrc), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every record, the deregistration's close reason included, fits the result schema.
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
	type counts struct{ status5xx, balancerErrors, backendConns, deregisterCloses, errors float64 }
	want := map[string]counts{
		"control":           {0, 0, 10, 0, 0},
		"delay-0":           {10, 10, 20, 10, 0},
		"delay-short":       {10, 10, 20, 10, 0},
		"delay-above":       {0, 0, 20, 10, 0},
		"idle":              {0, 0, 20, 10, 0},
		"server-idle-first": {0, 0, 20, 0, 0},
	}
	// When the first burst's 502s come: the instant the old target is stopped.
	stopped := map[string]float64{"delay-0": 1000, "delay-short": 1500}
	// When the old target of each variant with deregister closes is stopped.
	stops := map[string]float64{"delay-0": 1000, "delay-short": 1500, "delay-above": 6000, "idle": 6000}
	for _, r := range out.Runs {
		w, ok := want[r.Variant]
		if !ok {
			t.Fatalf("unexpected variant %s", r.Variant)
		}
		if r.Status == report.StatusError {
			t.Fatalf("%s: %s", r.Variant, r.Error)
		}
		m := r.Metrics
		got := counts{m.Status5xx, m.BalancerErrors, m.BackendConnections, float64(r.Closes["server"]["deregister"]), m.Errors}
		if got != w {
			t.Errorf("%s: status_5xx, balancer_errors, backend_connections, deregister closes, errors = %v; the plan gives %v", r.Variant, got, w)
		}
		if r.Variant == "server-idle-first" && r.Closes["server"]["idle"] != 10 {
			t.Errorf("server-idle-first: %d idle closes; the old target's ten close idle at 3 s (the new target's would at 8 s, after the run)", r.Closes["server"]["idle"])
		}
		for _, c := range readConns(t, filepath.Join(out.Dir, report.ConnectionsPath(r.Scenario, r.Variant))) {
			if c.Reason == "deregister" && (c.Side != "server" || c.ClosedBy != "server" || c.ClosedMs == nil || *c.ClosedMs != stops[r.Variant]) {
				t.Errorf("%s: a deregister close %+v; want the server's, at %v ms", r.Variant, c, stops[r.Variant])
			}
		}
		for _, rq := range readRequests(t, filepath.Join(out.Dir, r.RequestsFile)) {
			first := rq.Seq < 10 // seqs count from 0: the first burst is 0-9
			at, failed := stopped[r.Variant]
			switch {
			case first && failed && (rq.Status != 502 || rq.LatencyMs != at):
				t.Errorf("%s request %d: status %d after %v ms; want the balancer's 502 at %v ms, when the old target stopped", r.Variant, rq.Seq, rq.Status, rq.LatencyMs, at)
			case (!first || !failed) && (rq.Status != 200 || rq.LatencyMs != 2000):
				t.Errorf("%s request %d: status %d after %v ms; want 200 after the server's 2,000 ms", r.Variant, rq.Seq, rq.Status, rq.LatencyMs)
			case !first && r.Variant != "control" && rq.BackendReused:
				t.Errorf("%s request %d rode a reused backend connection after the deregistration", r.Variant, rq.Seq)
			}
		}
	}
}

func readConns(t *testing.T, path string) []report.Conn {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []report.Conn
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c report.Conn
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}
