package stage

import (
	"sync"
	"time"
)

// Pacer is the bandwidth stage: a serial link of a given rate. Bytes leave no faster
// than its rate, one after another; a byte that finds the link busy waits (the queueing
// delay), and its chunk is released RTT/2 after its last byte was serialized. A link has
// one per direction, or one per direction for all its connections when the limit is
// shared. Safe for concurrent use.
type Pacer struct {
	mu   sync.Mutex
	bps  int64
	busy time.Time // when the link can take the next byte
}

// NewPacer returns a pacer of bps bits per second; bps must be positive.
func NewPacer(bps int64) *Pacer { return &Pacer{bps: bps} }

// Pacers returns the pacers of one connection's two directions for a limit of bps bits
// per second: nil without a limit, the shared pair up and down when the limit is
// shared, else a fresh pair.
func Pacers(bps int64, up, down *Pacer) (*Pacer, *Pacer) {
	if bps <= 0 || up != nil {
		return up, down
	}
	return NewPacer(bps), NewPacer(bps)
}

// Send serializes n bytes that are ready at t and returns when the last one left.
func (p *Pacer) Send(t time.Time, n int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := t
	if p.busy.After(start) {
		start = p.busy
	}
	p.busy = start.Add(time.Duration(int64(n) * 8 * int64(time.Second) / p.bps))
	return p.busy
}
