package configure

import (
	"fmt"
	"net"
	"time"

	"github.com/kalab-dev/kalab/engine/middlebox"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// Middlebox translates a scenario's middlebox into the box's config (real time).
func Middlebox(m *scenario.Middlebox, scale shape.Scale) middlebox.Config {
	cfg := middlebox.Config{IdleTimeout: scale.D(m.IdleTimeout), Action: middlebox.Action(m.OnExpiry),
		ResetAt: middlebox.When(m.ResetAt)}
	switch m.ResetTo {
	case "client":
		cfg.ResetTo = middlebox.Client
	case "server":
		cfg.ResetTo = middlebox.Server
	default:
		cfg.ResetTo = middlebox.Both
	}
	return cfg
}

// TCPKeepalive translates the client's TCP keepalive to real time. The kernel takes whole
// seconds (TCP_KEEPIDLE and TCP_KEEPINTVL, at least 1; Go rounds up, src/net/tcpsock.go
// roundDurationUp), so a scaled value is rounded up here as the kernel will see it. A run
// whose rounding lets the middlebox's flows expire where the written values keep them
// alive measures something else, so it is refused.
func TCPKeepalive(st scenario.Settings, scale shape.Scale) (net.KeepAliveConfig, error) {
	ka := st.Client.TCPKeepalive
	if ka.Idle == 0 {
		return net.KeepAliveConfig{}, nil
	}
	cfg := net.KeepAliveConfig{Enable: true, Idle: WholeSeconds(scale.D(ka.Idle)),
		Interval: WholeSeconds(scale.D(ka.Interval)), Count: ka.Count}
	if ka.Interval == 0 {
		cfg.Interval = cfg.Idle
	}
	if st.Middlebox == nil || st.Middlebox.IdleTimeout == 0 {
		return cfg, nil
	}
	box := scale.D(st.Middlebox.IdleTimeout)
	written := ka.Idle < st.Middlebox.IdleTimeout && (ka.Interval == 0 || ka.Interval < st.Middlebox.IdleTimeout)
	if written && (cfg.Idle >= box || cfg.Interval >= box) {
		return cfg, fmt.Errorf("client.tcp_keepalive: at time scale %g the kernel's whole seconds make idle %v and interval %v (real time), not shorter than the middlebox's %v idle timeout as written; use a larger time_scale",
			float64(scale), cfg.Idle, cfg.Interval, box)
	}
	return cfg, nil
}

// WholeSeconds rounds up to the kernel's unit, at least one second.
func WholeSeconds(d time.Duration) time.Duration {
	return max(time.Second, (d+time.Second-1)/time.Second*time.Second)
}
