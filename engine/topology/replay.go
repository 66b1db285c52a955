package topology

import (
	"context"
	"fmt"
	"github.com/kalab-dev/kalab/engine/replay/pools"
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
	pools *pools.Pools
	sum   replay.Summary
}

func (r *replayClient) Start(_ context.Context, next string) (string, error) {
	ccfg, err := r.config(next)
	if err != nil {
		return "", err
	}
	ccfg.ConnIDs = new(atomic.Uint64) // one numbering across the pools: the records match ids to the server's
	r.ccfg, r.impl = ccfg, string(ccfg.Implementation)
	r.pools = pools.New(r.build, ccfg, dropAfter(ccfg.IdleTimeout))
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
	err := r.pools.CloseAll()
	r.stats, r.why = r.pools.Total, r.pools.Why
	return err
}

func (r *replayClient) drive(ctx context.Context, rc *recorder) error {
	src, err := replay.Open(scenario.ReplayConfig(r.st.Load))
	if err != nil {
		return fmt.Errorf("load.replay: %w", err)
	}
	defer func() { _ = src.Close() }() // read only: a failed close loses nothing
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
		p, err := r.pools.Get(q.Client, time.Now())
		if err != nil {
			failed = err
			break
		}
		wg.Add(1)
		n, from := seq, q.Client
		r.topo.launch(func() {
			defer wg.Done()
			ev := p.Cl.Do(ctx, n)
			r.pools.Done(p, time.Now())
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
		out.Clients, out.ClientsCapped = len(r.pools.Seen), r.pools.Capped
		out.PoolsOpened, out.PeakPools, out.PoolsDropped = r.pools.Opened, r.pools.Peak, r.pools.Dropped
	}
	for _, b := range s.FirstBad {
		out.FirstBad = append(out.FirstBad, report.BadLine{Line: b.Line, Reason: b.Reason})
	}
	return out
}
