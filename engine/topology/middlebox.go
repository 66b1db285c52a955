package topology

import (
	"context"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/middlebox"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// RoleMiddlebox is the role of the box that forgets idle flows.
const RoleMiddlebox = "middlebox"

// middleboxHop is a scenario's middlebox, the hop the client dials.
type middleboxHop struct {
	cfg     middlebox.Config // Upstream is filled at Start
	preset  string
	version string        // kalab's
	net     *vnet.Network // the in-memory network on the virtual clock; nil for loopback sockets
	next    *link         // the link behind the box, whose listen queue its dials go through (virtual)
	b       *middlebox.Box
}

func (m *middleboxHop) Role() string { return RoleMiddlebox }

func (m *middleboxHop) Start(_ context.Context, next string) (string, error) {
	cfg := m.cfg
	cfg.Upstream = next
	if m.net != nil {
		ln, err := m.net.Listen("")
		if err != nil {
			return "", err
		}
		cfg.Listener, cfg.Dial, cfg.Sleep = ln, m.net.DialContext, m.net.Sleep // polls in the network's order
		if m.next != nil {
			cfg.Dial = m.next.dialer()
		}
	}
	b, err := middlebox.Start(cfg)
	if err != nil {
		return "", err
	}
	m.b = b
	return b.Addr(), nil
}

// Identity names the box by the preset it models ("custom" without one); kalab runs it.
func (m *middleboxHop) Identity() Identity {
	name := m.preset
	if name == "" {
		name = "custom"
	}
	return Identity{Kind: "middlebox", Name: name, Program: "kalab", Version: m.version, Verified: true}
}

// Timing is nil: the box's idle clock is polled (middlebox.Config.Poll), its error at
// most one poll, a hundredth of the timeout.
func (m *middleboxHop) Timing() map[string]*lag.Recorder { return nil }

func (m *middleboxHop) Stats() Stats { return middleboxStats(m.b.Stats()) }

func (m *middleboxHop) Close() error {
	if m.b == nil {
		return nil
	}
	return m.b.Close()
}

func (m *middleboxHop) open() int64                { return m.b.Stats().Open }
func (m *middleboxHop) AcceptedFrom(peer int) bool { return m.b.AcceptedFrom(peer) }

// middleboxStats are the box's counters.
type middleboxStats middlebox.Stats

// Behind a chain of boxes the flat metrics add the boxes' counters up (a hop's own record
// starts from nothing, so there each is its box's alone), except middlebox_flows and
// middlebox_probe_refreshes: the flows the client opened and the probes that refreshed
// them are the first box's, the one the client dials (the boxes flatten last to first).
func (s middleboxStats) Flatten(into map[string]float64) {
	into["middlebox_flows"] = float64(s.Flows)
	into["middlebox_expired"] += float64(s.Expired)
	into["middlebox_dropped_segments"] += float64(s.DroppedSegments)
	into["middlebox_dropped_bytes"] += float64(s.DroppedBytes)
	into["middlebox_resets"] += float64(s.ResetsSent)
	into["middlebox_probe_refreshes"] = float64(s.ProbeRefreshes)
}
