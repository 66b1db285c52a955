// Package pools keeps a traffic replay's clients: one model client per client the trace
// names, built on its first request and dropped once it has idled past its idle timeout, so
// a replay of a million clients holds only those active.
package pools

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// New returns the pools of clients built by build from cfg, each dropped after dropAfter
// idle (never when 0).
func New(build func(client.Config) (client.Client, error), cfg client.Config, dropAfter time.Duration) *Pools {
	return &Pools{Build: build, Cfg: cfg, DropAfter: dropAfter, byKey: map[string]*Pool{}}
}

// Pools are a replay's clients, one model client each, built on a client's first request
// and closed once it has idled past DropAfter.
type Pools struct {
	Build     func(client.Config) (client.Client, error)
	Cfg       client.Config
	DropAfter time.Duration

	mu        sync.Mutex
	byKey     map[string]*Pool
	Opened    int                 // pools built: a client that came back after its pool was dropped counts again
	Seen      map[string]struct{} // distinct clients, up to maxSeen
	Capped    bool                // more than maxSeen distinct clients: len(seen) is a lower bound
	lastSweep time.Time
	Peak      int
	Dropped   int
	Total     client.Stats
	Why       map[uint64]string // why each client closed the connections it closed itself
}

// Pool is one client's model client.
type Pool struct {
	key      string
	Cl       client.Client
	inflight int
	idleAt   time.Time
}

// Get returns the client's pool, building it on its first request (or after it was
// dropped), and drops the Pools that idled too long.
func (ps *Pools) Get(key string, now time.Time) (*Pool, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.sweep(now)
	p := ps.byKey[key]
	if p == nil {
		cl, err := ps.Build(ps.Cfg)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		p = &Pool{key: key, Cl: cl}
		ps.byKey[key] = p
		ps.Peak, ps.Opened = max(ps.Peak, len(ps.byKey)), ps.Opened+1
		ps.see(key)
	}
	p.inflight++
	return p, nil
}

// maxSeen bounds the set that counts distinct clients (a few MB of keys).
const maxSeen = 1 << 16

func (ps *Pools) see(key string) {
	if _, ok := ps.Seen[key]; ok || ps.Capped {
		return
	}
	if len(ps.Seen) >= maxSeen {
		ps.Capped = true
		return
	}
	if ps.Seen == nil {
		ps.Seen = map[string]struct{}{}
	}
	ps.Seen[key] = struct{}{}
}

// Done marks p idle from now.
func (ps *Pools) Done(p *Pool, now time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.inflight--
	p.idleAt = now
}

// sweep closes the Pools idle longer than dropAfter, at most four times per dropAfter.
func (ps *Pools) sweep(now time.Time) {
	if ps.DropAfter <= 0 || now.Sub(ps.lastSweep) < ps.DropAfter/4 {
		return
	}
	ps.lastSweep = now
	for k, p := range ps.byKey {
		if p.inflight == 0 && now.Sub(p.idleAt) > ps.DropAfter {
			_ = ps.closeOne(p) // an idle pool dropped: its counts are taken whether or not its close failed
			delete(ps.byKey, k)
			ps.Dropped++
		}
	}
}

func (ps *Pools) closeOne(p *Pool) error {
	err := p.Cl.Close()
	s := p.Cl.Stats()
	ps.Total.Connections += s.Connections
	ps.Total.HiddenRetries += s.HiddenRetries
	if r, ok := p.Cl.(client.CloseReasoner); ok {
		if ps.Why == nil {
			ps.Why = map[uint64]string{}
		}
		maps.Copy(ps.Why, r.CloseReasons())
	}
	return err
}

// CloseAll closes every pool, adding its counts to Total.
func (ps *Pools) CloseAll() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var first error
	for k, p := range ps.byKey {
		if err := ps.closeOne(p); err != nil && first == nil {
			first = err
		}
		delete(ps.byKey, k)
	}
	return first
}
