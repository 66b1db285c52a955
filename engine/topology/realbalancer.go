package topology

import (
	"context"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/realserver"
)

// realBalancer is a real nginx or HAProxy as one balancer of the path (balancer.exec): a
// reverse proxy started on loopback in front of the hop after it, configured with the
// balancer's idle timeout and backend pool. kalab does not read its own counts: its hop
// record carries none, and the runs' checks may not read the balancer counts
// (engine/scenario's uncounted).
type realBalancer struct {
	cfg realserver.Config // Upstream is filled at Start
	rs  *realserver.Server
}

func (r *realBalancer) Role() string { return "balancer" }

func (r *realBalancer) Start(ctx context.Context, next string) (string, error) {
	cfg := r.cfg
	cfg.Upstream = next
	rs, err := realserver.Start(ctx, cfg)
	if err != nil {
		return "", err
	}
	r.rs = rs
	return rs.Addr(), nil
}

func (r *realBalancer) Identity() Identity {
	if r.rs == nil {
		return Identity{Kind: "balancer", Name: string(r.cfg.Kind)}
	}
	id := r.rs.Identity()
	return Identity{Kind: "balancer", Name: id.Name, Program: id.Program, Version: id.Version, Verified: id.Verified}
}

func (r *realBalancer) Timing() map[string]*lag.Recorder { return nil }

// Stats are none: a real balancer's answers, re-sends and backend connections are its own.
func (r *realBalancer) Stats() Stats { return noStats{} }

func (r *realBalancer) Close() error {
	if r.rs == nil {
		return nil
	}
	return r.rs.Close()
}

// noStats is a hop that counts nothing kalab can vouch for.
type noStats struct{}

func (noStats) Flatten(map[string]float64) {}
