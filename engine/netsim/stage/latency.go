package stage

import (
	"math/rand/v2"
	"sync"
	"time"
)

// jitterStream is the PCG stream of the jitter generator: with the seed it fixes the
// draws, so a run with the same seed draws the same delays in the same order.
const jitterStream = 0x6b616c6162

// Latency is the one-way delay stage: RTT/2 plus, with a jitter, an extra delay drawn
// uniformly from [0, jitter] by a generator seeded with the link's seed. The draws are
// the link's, shared by both its directions and all its connections, in the order the
// links ask for them. Safe for concurrent use.
type Latency struct {
	half, jitter time.Duration
	mu           sync.Mutex
	rng          *rand.Rand
}

// NewLatency returns the one-way delays of a link of the given round trip, jitter and
// seed.
func NewLatency(rtt, jitter time.Duration, seed int64) *Latency {
	return &Latency{
		half:   rtt / 2,
		jitter: jitter,
		rng:    rand.New(rand.NewPCG(uint64(seed), jitterStream)),
	}
}

// Half is the one-way delay without jitter, RTT/2.
func (o *Latency) Half() time.Duration { return o.half }

// Next draws one chunk's one-way delay.
func (o *Latency) Next() time.Duration {
	d := o.half
	if j := o.jitter; j > 0 {
		o.mu.Lock()
		d += time.Duration(o.rng.Int64N(int64(j) + 1))
		o.mu.Unlock()
	}
	return d
}

// Due is when a chunk that left its sender at left reaches the other end: one drawn
// one-way delay later, never before floor (the handshake's cost).
func (o *Latency) Due(left, floor time.Time) time.Time {
	due := left.Add(o.Next())
	if due.Before(floor) {
		due = floor
	}
	return due
}
