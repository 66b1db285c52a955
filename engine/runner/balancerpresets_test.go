package runner

import (
	"context"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// The ingress-nginx and gcp-alb presets in front of a Node backend (closing idle sockets at
// 6 s) behind 400 ms of backend round trip, with pauses seeded to land in the race window:
// each race the geometry counts (racePrediction, the same window the oracle draws) is a 502
// from the Google Front End, which keeps backend connections 600 s and re-sends nothing; a
// GET re-sent by ingress-nginx, whose upstream keepalive (60 s) outlives the pod's too; and a
// POST answered 502 by ingress-nginx, which passes no non-idempotent request on once sent.
func TestCloudBalancerPresetsAgainstANodeBackend(t *testing.T) {
	t.Parallel()
	src := `
name: presets
time_scale: 0.5
network: {rtt: 20ms}
server: {preset: node}
balancer: {backend_network: {rtt: 400ms}}
client: {preset: node-agent}
load: {requests: 60, burst: 4, pause: 5.2s..6.4s, seed: 995}
variants:
  - {name: gcp-alb, balancer: {preset: gcp-alb}}
  - {name: ingress-get, balancer: {preset: ingress-nginx}}
  - {name: ingress-post, balancer: {preset: ingress-nginx}, client: {method: POST}}
`
	p := plan(t, src)
	in, after, _ := racePrediction(p.Scenarios[0].Runs[0].Settings)
	if in == 0 {
		t.Fatal("no pause falls in the race window: the test shows nothing")
	}
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]float64{ // status_5xx, balancer_retries, backend_errors
		"gcp-alb":      {float64(in), 0, float64(in)},
		"ingress-get":  {0, float64(in), float64(in)},
		"ingress-post": {float64(in), 0, float64(in)},
	}
	for _, r := range out.Runs {
		m := r.Metrics
		got := [3]float64{m.Status5xx, m.BalancerRetries, m.BackendErrors}
		if r.Status != report.StatusPass || got != want[r.Variant] || m.Errors != 0 {
			t.Errorf("%s: %s %s, status_5xx, balancer_retries, backend_errors %v, want %v (races %d), client errors %.0f",
				r.Variant, r.Status, r.Error, got, want[r.Variant], in, m.Errors)
		}
		if r.Variant == "gcp-alb" && m.BackendConnections != float64(1+in+after) {
			t.Errorf("gcp-alb: %.0f backend connections, want %d: one, one after each race, one after each pause past the close", m.BackendConnections, 1+in+after)
		}
	}
}
