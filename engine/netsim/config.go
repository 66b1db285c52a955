package netsim

import (
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/netsim/clock"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

// Config describes one simulated link. Durations arrive already scaled by the
// runner; netsim applies them as given.
type Config struct {
	// Upstream is the host:port of the server. It must be a loopback address.
	Upstream string
	// RTT is the full round trip; each direction is delayed RTT/2.
	RTT time.Duration
	// Jitter, when positive, adds to each chunk's one-way delay an extra delay
	// drawn uniformly from [0, Jitter]: one-sided, because a path's propagation
	// delay is a floor that queueing only adds to, and a scenario's rtt stays
	// the fastest a round trip can be. A round trip then takes RTT plus the sum
	// of two draws (mean RTT+Jitter, at most RTT+2*Jitter). It never reorders
	// chunks: a chunk is never released before the one that arrived ahead of it.
	Jitter time.Duration
	// Seed seeds the jitter generator so a run can be repeated exactly.
	Seed int64
	// Listen is the address the proxy binds, "127.0.0.1:0" when empty. Any
	// address that is not loopback is rejected.
	Listen string
	// SpinWindow is how long before a chunk is due its wait stops trusting
	// Go timers, which on Linux fire up to about a millisecond late, and
	// is handed to a precise clock shared by every proxy in the process.
	// That clock blocks on a kernel high-resolution timer and yields in a
	// loop only for the last min(SpinWindow, 250 µs); where the kernel
	// offers no timerfd it yields for the whole window. Zero means
	// DefaultSpinWindow; a negative value makes each writer wait on a plain
	// Go timer, trading that precision for a little CPU.
	SpinWindow time.Duration
	// Lag, when set, receives how late each chunk was released against its due time:
	// the link's own measure of whether the machine kept its timing.
	Lag *lag.Recorder
	// OnConn, when set, receives each link's ConnRecord once the link is torn down (by
	// either end or by Close). It is called from the proxy's goroutines, concurrently.
	OnConn func(ConnRecord)
	// AllowRemoteUpstream lets Upstream be an address outside loopback (a user's own
	// server elsewhere). The proxy still listens on loopback only.
	AllowRemoteUpstream bool

	// InitialWindow is the TCP initial congestion window of the slow-start model, in
	// segments of MSS bytes, for both directions; zero means DefaultInitialWindow (10)
	// and a negative value turns slow start off, so every chunk leaves as it arrives.
	// See package stage (slowstart.go) for the model and what it leaves out.
	InitialWindow int
	// NoSlowStartAfterIdle keeps the window of a connection that was idle longer than
	// its RTO, as a host with net.ipv4.tcp_slow_start_after_idle=0 does. By default
	// the window shrinks as Linux's does.
	NoSlowStartAfterIdle bool
	// Bandwidth, when positive, limits each direction to this many bits per second:
	// bytes are serialized one after another and wait while the link is busy.
	Bandwidth int64
	// BandwidthShared makes the limit one bottleneck per direction for all links of the
	// proxy instead of one per link.
	BandwidthShared bool

	// Backlog, when positive, is the listen queue at the proxy's edge: connections
	// the modelled server has not accepted yet. AcceptDelay is how long that server
	// takes per accept (a server too busy to accept). See backlog.go.
	Backlog     int
	AcceptDelay time.Duration
	// RefuseOverflow answers a connection that finds the queue full with a reset, as
	// Linux with net.ipv4.tcp_abort_on_overflow=1; by default its SYN is dropped and
	// the client's kernel retries it (1 s, 3 s, 7 s, ... after the first).
	RefuseOverflow bool

	// quantum overrides clock.Quantum(RTT) when positive; tests only, to make the
	// coalescing delay large enough to observe.
	quantum time.Duration
}

// DefaultSpinWindow is the SpinWindow used when Config leaves it zero.
const DefaultSpinWindow = clock.DefaultSpinWindow

// MSS is the segment size of the sending model (stage.MSS).
const MSS = stage.MSS

// DefaultInitialWindow is the initial congestion window in segments (stage.DefaultInitialWindow).
const DefaultInitialWindow = stage.DefaultInitialWindow

// RTO returns the retransmission timeout the model uses for a round-trip time (stage.RTO).
func RTO(rtt time.Duration) time.Duration { return stage.RTO(rtt) }

// Stats is a snapshot of a proxy's counters since Start.
type Stats struct {
	// Accepted counts client connections accepted.
	Accepted int64
	// Open is the number of links not yet torn down.
	Open int64
	// PeakOpen is the highest Open seen.
	PeakOpen int64
	// BytesUp counts bytes delivered to the upstream (client -> server).
	BytesUp int64
	// BytesDown counts bytes delivered to clients (server -> client).
	BytesDown int64
	// ResetsUp counts resets delivered to the upstream (client -> server).
	ResetsUp int64
	// ResetsDown counts resets delivered to clients, including refused
	// upstream connections.
	ResetsDown int64
	// Overflows counts connections refused because the modelled listen queue was
	// full (RefuseOverflow). Dropped SYNs never reach the proxy: the client's kernel
	// retries them and the client's connect time shows them.
	Overflows int64
}

// checkModel refuses a model the link cannot run: a negative delay, rate or queue. Both
// links (Start and StartVirtual) check it first.
func (cfg *Config) checkModel() error {
	switch {
	case cfg.RTT < 0:
		return fmt.Errorf("netsim: rtt %v is negative", cfg.RTT)
	case cfg.Bandwidth < 0:
		return fmt.Errorf("netsim: bandwidth %d bit/s is negative", cfg.Bandwidth)
	case cfg.Jitter < 0:
		return fmt.Errorf("netsim: jitter %v is negative", cfg.Jitter)
	case cfg.Backlog < 0 || cfg.AcceptDelay < 0:
		return fmt.Errorf("netsim: backlog %d and accept delay %v must not be negative", cfg.Backlog, cfg.AcceptDelay)
	}
	return nil
}

// latency returns the one-way delays of a link of cfg (stage.Latency).
func (cfg *Config) latency() *stage.Latency {
	return stage.NewLatency(cfg.RTT, cfg.Jitter, cfg.Seed)
}

// sharedPacers returns the bottleneck of a limit shared by all links of a proxy
// (BandwidthShared), one pacer per direction, or nils.
func (cfg *Config) sharedPacers() (up, down *stage.Pacer) {
	if cfg.Bandwidth > 0 && cfg.BandwidthShared {
		return stage.NewPacer(cfg.Bandwidth), stage.NewPacer(cfg.Bandwidth)
	}
	return nil, nil
}

// paths returns the timing stages of the two directions of a connection the client
// opened at t0: the handshake's floors (stage.Floors), a fresh congestion window each as
// cfg asks for it, the pacers (the proxy's shared pair, or a fresh pair with a limit per
// link, or none) and the proxy's delays. Both links build their directions from it.
func (cfg *Config) paths(t0 time.Time, sharedUp, sharedDown *stage.Pacer, delays *stage.Latency) (up, down stage.Path) {
	if fault.On(fault.HandshakeShort) {
		t0 = t0.Add(-cfg.RTT) // a round trip short: the floors as if the SYN-ACK were back at once
	}
	upFloor, downFloor := stage.Floors(t0, cfg.RTT)
	paceUp, paceDown := stage.Pacers(cfg.Bandwidth, sharedUp, sharedDown)
	window := stage.NewWindow(cfg.RTT, cfg.InitialWindow, !cfg.NoSlowStartAfterIdle)
	up = stage.Path{Floor: upFloor, Window: window, Pace: paceUp, Delay: delays}
	down = stage.Path{Floor: downFloor, Window: window, Pace: paceDown, Delay: delays}
	return up, down
}
