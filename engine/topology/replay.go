package topology

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/replay"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// replayAhead is how many requests the reader goroutine decodes ahead of the clock.
const replayAhead = 256

// replayClient is the client hop of a load.replay run: a model client (the scenario's
// profile) per recorded client, each with its own pool, each request started at its
// recorded offset. The recording is read while it is replayed, a bounded window ahead.
type replayClient struct {
	*goClient
	ccfg  client.Config
	pools *clientPools
	sum   replay.Summary
}

func (r *replayClient) Start(_ context.Context, next string) (string, error) {
	ccfg, err := r.config(next)
	if err != nil {
		return "", err
	}
	ccfg.ConnIDs = new(atomic.Uint64) // one numbering across the pools: the records match ids to the server's
	r.ccfg, r.impl = ccfg, string(ccfg.Implementation)
	r.pools = &clientPools{build: r.build, cfg: ccfg, dropAfter: dropAfter(ccfg.IdleTimeout), byKey: map[string]*pool{}}
	return "", nil
}

// dropAfter is how long a client's pool may sit with nothing in flight before it is
// closed: past the client's own idle timeout its connections are closed anyway, so
// dropping it changes nothing the server or the client sees. Without a client idle timeout
// a pool is kept to the end (a connection the server closed is still the pool's to find).
func dropAfter(idle time.Duration) time.Duration {
	if idle <= 0 {
		return 0
	}
	return idle + time.Second
}

func (r *replayClient) Close() error {
	if r.pools == nil {
		return nil
	}
	err := r.pools.closeAll()
	r.stats, r.why = r.pools.total, r.pools.why
	return err
}

func (r *replayClient) drive(ctx context.Context, rc *recorder) error {
	src, err := replay.Open(scenario.ReplayConfig(r.st.Load))
	if err != nil {
		return fmt.Errorf("load.replay: %w", err)
	}
	defer src.Close()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	reqs := make(chan replay.Request, replayAhead)
	var sum replay.Summary
	go func() {
		defer close(reqs)
		for q, ok := src.Next(); ok; q, ok = src.Next() {
			select {
			case reqs <- q:
			case <-ctx.Done():
				return
			}
		}
		sum = src.Summary()
	}()
	err = r.send(ctx, rc, reqs)
	stop()
	for range reqs {
		// let the reader see the cancel and finish before its summary is read
	}
	r.sum = sum
	if r.sum.Format == "" {
		r.sum = src.Summary() // cut short: what was read so far
	} else if cerr := src.Check(); err == nil && cerr != nil {
		err = fmt.Errorf("load.replay %s: %w", r.st.Load.Replay, cerr)
	}
	return err
}

// send starts each request at its recorded offset (scaled) on its client's pool and
// waits for all of them.
func (r *replayClient) send(ctx context.Context, rc *recorder, reqs <-chan replay.Request) (failed error) {
	var wg sync.WaitGroup
	sleep := r.topo.sleep()
	start, seq := time.Now(), 0
	for q := range reqs {
		at := start.Add(r.scale.D(scenario.Duration(q.At)))
		if !sleep(at, ctx.Done()) {
			break
		}
		r.schedule.Since(at)
		p, err := r.pools.get(q.Client, time.Now())
		if err != nil {
			failed = err
			break
		}
		wg.Add(1)
		n, from := seq, q.Client
		r.topo.launch(func() {
			defer wg.Done()
			ev := p.cl.Do(ctx, n)
			r.pools.done(p, time.Now())
			if !ev.OK() && ctx.Err() != nil {
				return // cut short by an interrupt or the deadline
			}
			rc.recordFrom(ev, rc.tm.QueueWait(at, true, ev.Start), from)
		})
		seq++
	}
	wg.Wait()
	return failed
}

// recordingReader is a client hop that read a recording: the record gets its replay block.
type recordingReader interface{ replayRecord() *report.Replay }

// replayRecord is the run record's replay block.
func (r *replayClient) replayRecord() *report.Replay {
	s := r.sum
	out := &report.Replay{File: r.st.Load.Replay, Format: s.Format, Lines: s.Lines, Requests: s.Requests,
		Skipped: s.Skipped, Late: s.Late, BadLines: s.BadLines, FirstBad: []report.BadLine{}}
	if r.pools != nil {
		out.Clients, out.ClientsCapped = len(r.pools.seen), r.pools.capped
		out.PoolsOpened, out.PeakPools, out.PoolsDropped = r.pools.opened, r.pools.peak, r.pools.dropped
	}
	for _, b := range s.FirstBad {
		out.FirstBad = append(out.FirstBad, report.BadLine{Line: b.Line, Reason: b.Reason})
	}
	return out
}

// clientPools are the replay's clients, one model client each, built on a client's first
// request and closed once it has idled past dropAfter.
type clientPools struct {
	build     func(client.Config) (client.Client, error)
	cfg       client.Config
	dropAfter time.Duration

	mu        sync.Mutex
	byKey     map[string]*pool
	opened    int                 // pools built: a client that came back after its pool was dropped counts again
	seen      map[string]struct{} // distinct clients, up to maxSeen
	capped    bool                // more than maxSeen distinct clients: len(seen) is a lower bound
	lastSweep time.Time
	peak      int
	dropped   int
	total     client.Stats
	why       map[uint64]string // why each client closed the connections it closed itself
}

type pool struct {
	key      string
	cl       client.Client
	inflight int
	idleAt   time.Time
}

// get returns the client's pool, building it on its first request (or after it was
// dropped), and drops the clientPools that idled too long.
func (ps *clientPools) get(key string, now time.Time) (*pool, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.sweep(now)
	p := ps.byKey[key]
	if p == nil {
		cl, err := ps.build(ps.cfg)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		p = &pool{key: key, cl: cl}
		ps.byKey[key] = p
		ps.peak, ps.opened = max(ps.peak, len(ps.byKey)), ps.opened+1
		ps.see(key)
	}
	p.inflight++
	return p, nil
}

// maxSeen bounds the set that counts distinct clients (a few MB of keys).
const maxSeen = 1 << 16

func (ps *clientPools) see(key string) {
	if _, ok := ps.seen[key]; ok || ps.capped {
		return
	}
	if len(ps.seen) >= maxSeen {
		ps.capped = true
		return
	}
	if ps.seen == nil {
		ps.seen = map[string]struct{}{}
	}
	ps.seen[key] = struct{}{}
}

func (ps *clientPools) done(p *pool, now time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.inflight--
	p.idleAt = now
}

// sweep closes the clientPools idle longer than dropAfter, at most four times per dropAfter.
func (ps *clientPools) sweep(now time.Time) {
	if ps.dropAfter <= 0 || now.Sub(ps.lastSweep) < ps.dropAfter/4 {
		return
	}
	ps.lastSweep = now
	for k, p := range ps.byKey {
		if p.inflight == 0 && now.Sub(p.idleAt) > ps.dropAfter {
			ps.closeOne(p)
			delete(ps.byKey, k)
			ps.dropped++
		}
	}
}

func (ps *clientPools) closeOne(p *pool) error {
	err := p.cl.Close()
	s := p.cl.Stats()
	ps.total.Connections += s.Connections
	ps.total.HiddenRetries += s.HiddenRetries
	if r, ok := p.cl.(client.CloseReasoner); ok {
		if ps.why == nil {
			ps.why = map[uint64]string{}
		}
		maps.Copy(ps.why, r.CloseReasons())
	}
	return err
}

func (ps *clientPools) closeAll() error {
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
