package configure

import (
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/shape"
)

// Behind a chain of balancers a deregistration takes the server out of the last one, whose
// deregistration_delay is the old target's grace; each balancer's backend link is its own,
// with its own round trip and its own stream of the seed.
func TestBalancerChainConfig(t *testing.T) {
	p := plan(t, `
name: chain
server: {idle_timeout: 60s, events: [{do: deregister, at: 1s}]}
balancer:
  - {preset: aws-alb, backend_network: {rtt: 2ms, jitter: 1ms}}
  - {preset: aws-alb, deregistration_delay: 7s, backend_network: {rtt: 400ms, jitter: 1ms}}
`)
	st := p.Scenarios[0].Runs[0].Settings
	cfg := Server(st, 1)
	if len(cfg.Events) != 1 || cfg.Events[0].Grace != 7*time.Second {
		t.Errorf("the deregistration's grace is %+v, want the last balancer's 7s", cfg.Events)
	}
	a, b := BackendLink(st, 0, shape.Scale(1), ""), BackendLink(st, 1, shape.Scale(1), "")
	if a.RTT != 2*time.Millisecond || b.RTT != 400*time.Millisecond || a.Seed == b.Seed {
		t.Errorf("backend links: %v seed %d and %v seed %d, want 2ms and 400ms on two seeds", a.RTT, a.Seed, b.RTT, b.Seed)
	}
	if bc := Balancer(st.Balancers()[1], 1, "x"); bc.Backend.Addr != "x" || bc.IdleTimeout != 60*time.Second {
		t.Errorf("the second balancer: %+v", bc)
	}
}
