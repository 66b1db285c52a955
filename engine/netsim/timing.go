package netsim

import (
	"math/rand/v2"
	"sync"
	"time"
)

// What the real link (Proxy) and the virtual one (VirtualProxy) share to time a chunk:
// the one-way delay with its seeded jitter, and the sending model's departures.

// oneWayDelays draws the one-way delays of a proxy's chunks: RTT/2 plus, with Jitter,
// an extra delay drawn uniformly from [0, Jitter] by a generator seeded with Seed, so a
// run with the same seed draws the same delays in the same order. Safe for concurrent use.
type oneWayDelays struct {
	half, jitter time.Duration
	mu           sync.Mutex
	rng          *rand.Rand
}

func newOneWayDelays(cfg *Config) *oneWayDelays {
	return &oneWayDelays{
		half:   cfg.RTT / 2,
		jitter: cfg.Jitter,
		rng:    rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6b616c6162)),
	}
}

// next draws one chunk's one-way delay.
func (o *oneWayDelays) next() time.Duration {
	d := o.half
	if j := o.jitter; j > 0 {
		o.mu.Lock()
		d += time.Duration(o.rng.Int64N(int64(j) + 1))
		o.mu.Unlock()
	}
	return d
}

// due is when a chunk that left its sender at left reaches the other end: one drawn
// one-way delay later, never before floor (the handshake's cost).
func (o *oneWayDelays) due(left, floor time.Time) time.Time {
	due := left.Add(o.next())
	if due.Before(floor) {
		due = floor
	}
	return due
}

// dataDues times n bytes of data that reached a direction at stamp by the sending model
// (tcpmodel.go): nothing leaves before the handshake lets it (floor less the one-way
// trip), snd splits the bytes into pieces by the round each leaves in, pace (when not nil)
// serializes them at the bandwidth limit, and each piece is due one drawn one-way delay
// after its last byte left, never before floor. The pieces are appended to out with dep
// holding that due time.
func dataDues(snd *sender, pace *pacer, delays *oneWayDelays, stamp, floor time.Time, n int, out []piece) []piece {
	ready := stamp
	if dep := floor.Add(-delays.half); ready.Before(dep) {
		ready = dep
	}
	first := len(out)
	out = snd.depart(ready, n, out)
	for i := first; i < len(out); i++ {
		left := out[i].dep
		if pace != nil {
			left = pace.send(left, out[i].n)
		}
		out[i].dep = delays.due(left, floor)
	}
	return out
}
