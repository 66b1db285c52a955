package topology

import (
	"github.com/kalab-dev/kalab/engine/balancer"
	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// balancerHop is what the runner needs from the balancer in the middle of a two-hop
// topology. The embedded proxy is the only one today; a real nginx or HAProxy taking its
// place implements the same methods: started on a loopback port with a generated
// configuration, Stats and Conns filled from what kalab controls (the links on both sides
// and the server's records), never from the program's own report.
type balancerHop interface {
	Addr() string
	Stats() balancer.Stats
	// Conns are the client-facing connections: when the balancer closed them, and why.
	Conns() []balancer.ConnRecord
	// Deregister stops sending requests on the backend connections open now (a
	// deregistration: server.events deregister).
	Deregister() error
	Close() error
}

// startBalancer starts balancer b of a run, in front of addr.
func startBalancer(b *scenario.Balancer, sc shape.Scale, addr string, n *vnet.Network) (balancerHop, error) {
	cfg := configure.Balancer(b, sc, addr)
	if n != nil {
		ln, err := n.Listen("")
		if err != nil {
			return nil, err
		}
		cfg.Listener, cfg.Backend.Dial = ln, n.DialContext
	}
	return balancer.Start(cfg)
}
