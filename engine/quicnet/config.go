package quicnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/loopback"
	"github.com/kalab-dev/kalab/engine/netsim/clock"
)

// What a flow table does with a flow it forgot (Config.OnExpiry).
const (
	// ExpiryRebind maps the client's next datagram to a new flow with a new upstream
	// socket: the server sees the client's address change, as after a NAT rebinding.
	ExpiryRebind = "rebind"
	// ExpiryDrop black-holes the client's address in both directions, as a firewall
	// that lost its state and refuses what it no longer knows.
	ExpiryDrop = "drop"
)

// Config describes one datagram link. Durations are used as given: the caller scales
// them.
type Config struct {
	// Listen is where clients send, "127.0.0.1:0" when empty; Upstream is the server.
	// Both must be loopback addresses.
	Listen, Upstream string
	// RTT is the round trip; each datagram is delayed RTT/2 plus, with a Jitter, an
	// extra delay drawn uniformly from [0, Jitter] by a generator seeded with Seed
	// (stage.Latency, shared by both directions in the order datagrams arrive).
	RTT, Jitter time.Duration
	Seed        int64
	// Bandwidth, when positive, limits each direction to this many bits per second.
	Bandwidth int64
	// Loss is the probability in [0, 1] that a datagram is dropped. The draws come from
	// a PCG stream per direction seeded with Seed, so a run repeats exactly.
	Loss float64
	// FlowTimeout, when positive, is how long a flow may stay idle before the link
	// forgets it; OnExpiry ("rebind" by default, or "drop") says what comes after.
	FlowTimeout time.Duration
	OnExpiry    string
	// ReplayFirstFlight, when positive, makes the link an on-path attacker that replays
	// each new flow's 0-RTT first flight this long after its first 0-RTT datagram, from
	// a socket of its own (see replay.go).
	ReplayFirstFlight time.Duration
	// Sleep waits until at, or returns false once done closes; a Go timer when nil. The
	// real clock passes its precise clock (engine/netsim/clock), whose Go timers would
	// otherwise fire up to a millisecond late.
	Sleep func(at time.Time, done <-chan struct{}) bool
	// Lag, when set, receives how late each datagram was released against its due time.
	// It is recorded as it is (AddAt), without Recorder.Hold's injected lateness, which
	// spins and would stop a virtual clock.
	Lag *lag.Recorder
}

// check fills the defaults and refuses what the model cannot run.
func (c Config) check() (Config, error) {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.OnExpiry == "" {
		c.OnExpiry = ExpiryRebind
	}
	if c.Sleep == nil {
		c.Sleep = clock.TimerSleep // a Go timer: exact on the virtual clock
	}
	var err error
	switch {
	case c.Upstream == "":
		err = errors.New("no upstream")
	case c.RTT < 0, c.Jitter < 0, c.FlowTimeout < 0, c.ReplayFirstFlight < 0:
		err = errors.New("a negative duration")
	case c.Bandwidth < 0:
		err = fmt.Errorf("bandwidth %d bit/s is negative", c.Bandwidth)
	case !(c.Loss >= 0 && c.Loss <= 1):
		err = fmt.Errorf("loss %v is not a probability", c.Loss)
	case c.OnExpiry != ExpiryRebind && c.OnExpiry != ExpiryDrop:
		err = fmt.Errorf("on expiry %q: want %q or %q", c.OnExpiry, ExpiryRebind, ExpiryDrop)
	}
	if err == nil {
		c.Listen, err = loopback.Check(c.Listen, false)
	}
	if err == nil {
		c.Upstream, err = loopback.Check(c.Upstream, false)
	}
	if err != nil {
		return c, fmt.Errorf("quicnet: %w", err)
	}
	return c, nil
}

// upstreamAddr resolves the checked upstream and the address the link's own sockets
// bind, of the upstream's family, so that a real IPv4 socket never writes to ::1.
func (c Config) upstreamAddr() (*net.UDPAddr, string, error) {
	ap, err := netip.ParseAddrPort(c.Upstream)
	if err != nil {
		return nil, "", fmt.Errorf("quicnet: upstream %q: %w", c.Upstream, err)
	}
	local := "127.0.0.1:0"
	if ap.Addr().Is6() {
		local = "[::1]:0"
	}
	return net.UDPAddrFromAddrPort(ap), local, nil
}
