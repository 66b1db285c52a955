package runner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/kalab-dev/kalab/engine/netsim"
)

// budget shares the process's file descriptors among runs in parallel: a run holds as many
// units as connections it can open at once, so two 5,000-connection bursts never overlap
// while small runs still do.
type budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	free  int
	total int
	alone int // reruns waiting for the whole budget; nothing else starts meanwhile
}

func newBudget(total int) *budget {
	b := &budget{free: total, total: total}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits for n units (capped at the total, so a run larger than the budget runs
// alone); it returns what it took, or 0 when ctx ended first.
func (b *budget) acquire(ctx context.Context, n int) int {
	n = min(max(n, 1), b.total)
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n || b.alone > 0 {
		if ctx.Err() != nil {
			return 0
		}
		b.cond.Wait()
	}
	b.free -= n
	return n
}

// acquireAll waits until no run holds any unit and takes them all, so that a run is alone in
// the process; runs asking for less wait behind it. It returns what it took, or 0 when ctx
// ended first.
func (b *budget) acquireAll(ctx context.Context) int {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alone++
	defer func() { b.alone--; b.cond.Broadcast() }()
	for b.free < b.total {
		if ctx.Err() != nil {
			return 0
		}
		b.cond.Wait()
	}
	b.free = 0
	return b.total
}

func (b *budget) release(n int) {
	b.mu.Lock()
	b.free += n
	b.cond.Broadcast()
	b.mu.Unlock()
}

// connWeight is how many connections a run can hold open at once.
func connWeight(concurrency, requests int) int {
	if concurrency <= 0 {
		concurrency = requests // an open model with no cap
	}
	return min(concurrency, requests) + 1
}

// fileBudget raises the descriptor limit toward what the plan wants and returns how many
// simulated connections may be open at once. The descriptors already open (inherited from
// the parent process, or held by the program embedding kalab) count against the limit, so a
// run is never started with fewer descriptors than it needs, which would surface as request
// errors (resets, refused connects) indistinguishable from the races kalab measures. A run
// larger than the budget is not started: tooBig says why, and it ends as an engine error.
func fileBudget(weights []int, parallel int) (total int, tooBig func(weight int) string, err error) {
	const reserve = 256 // logs, result files, listeners
	per := netsim.DescriptorsPerConn
	sorted := slices.Clone(weights)
	slices.SortFunc(sorted, func(a, b int) int { return b - a })
	largest := sorted[0]
	sum := 0 // the largest runs that could overlap
	for _, w := range sorted[:min(parallel, len(sorted))] {
		sum += w
	}
	inUse := openDescriptors()
	if err := netsim.RaiseFileLimit(uint64(per*sum + reserve + inUse)); err != nil {
		// As far as it goes: the runs that do not fit say so one by one.
		_ = netsim.RaiseFileLimit(uint64(per*largest + reserve + inUse))
	}
	cur, err := netsim.FileLimit()
	if err != nil {
		return 0, nil, err
	}
	free := max(int(min(cur, 1<<40))-reserve-inUse, 0)
	total = max(free/per, 1)
	tooBig = func(weight int) string {
		if per*weight <= free {
			return ""
		}
		return fmt.Sprintf("not started: the run needs %d file descriptors (%d connections, %d each) but only %d are free: "+
			"the limit is %d and %d are already open, most likely inherited from the parent process; "+
			"close them (or start kalab from a shell that does not pass them on), raise the limit (ulimit -n), or simulate fewer connections",
			per*weight, weight, per, free, cur, inUse)
	}
	return total, tooBig, nil
}

// openDescriptors counts the process's open file descriptors (/proc/self/fd); 0 where that
// cannot be read, which leaves the budget as it was before this count existed.
func openDescriptors() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return max(len(ents)-1, 0) // the directory's own descriptor while it is read
}
