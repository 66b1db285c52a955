package admit

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// Budget shares the process's file descriptors among runs in parallel: a run holds as many
// units as descriptors its connections can hold at once (see runHold), so two 5,000-connection bursts never overlap
// while small runs still do.
type Budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	free  int
	total int
	// reruns: the units held are reruns' (AcquireRerun). First attempts and reruns never
	// hold units at once, so this and free say who holds what; it ends with the last unit.
	reruns bool
}

func NewBudget(total int) *Budget {
	b := &Budget{free: total, total: total}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// wakeWhenDone makes the waiters re-check once ctx ends, so a cancelled acquire returns;
// the caller calls what it returns when it stops waiting.
func (b *Budget) wakeWhenDone(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
}

// Acquire waits for n units (capped at the total, so a run larger than the budget runs
// alone), and for no rerun to hold any (AcquireRerun): a first attempt does not start
// beside reruns. It returns what it took, or 0 when ctx ended first.
func (b *Budget) Acquire(ctx context.Context, n int) int {
	n = min(max(n, 1), b.total)
	defer b.wakeWhenDone(ctx)()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n || b.reruns {
		if ctx.Err() != nil {
			return 0
		}
		b.cond.Wait()
	}
	b.free -= n
	return n
}

// AcquireAll waits until no run holds any unit and takes them all, so that a run is alone in
// the process. Runs asking for less go on meanwhile: a noisy run's rerun alone waits for a
// lull, at the latest the end of the plan, rather than hold every other run back for its
// whole length (a 36 s stale-race rerun had stopped the 50 runs behind it). It returns
// what it took, or 0 when ctx ended first.
func (b *Budget) AcquireAll(ctx context.Context) int {
	defer b.wakeWhenDone(ctx)()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < b.total {
		if ctx.Err() != nil {
			return 0
		}
		b.cond.Wait()
	}
	b.free = 0
	return b.total
}

func (b *Budget) Release(n int) {
	b.mu.Lock()
	b.free += n
	b.reruns = b.reruns && b.free < b.total
	b.cond.Broadcast()
	b.mu.Unlock()
}

// AcquireRerun waits until every unit held is a rerun's and n are free, and takes them for
// a noisy run's rerun: reruns run beside one another, never beside a first attempt, and
// first attempts wait while any runs (Acquire). Like AcquireAll it waits for a lull in the
// first attempts, at the latest the end of the plan; unlike it, the reruns gathered there
// run together rather than one after another (five 37-62 s reruns had taken three
// minutes at the end of a suite, on a machine 98% idle). What a rerun takes it gives back
// with Release. It returns what it took, or 0 when ctx ended first.
func (b *Budget) AcquireRerun(ctx context.Context, n int) int {
	n = min(max(n, 1), b.total)
	defer b.wakeWhenDone(ctx)()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n || (b.free < b.total && !b.reruns) {
		if ctx.Err() != nil {
			return 0
		}
		b.cond.Wait()
	}
	b.free -= n
	b.reruns = true
	return n
}

// Hold is what one run holds open at once in this process.
type Hold struct {
	Conns int    // client connections open at once, one being replaced included
	FDs   int    // descriptors those connections (and the hops behind them) take here
	Per   string // how fds was counted, for the message when it does not fit
}

// http2Streams is the stream limit assumed for an HTTP/2 server that does not set one: RFC
// 9113 section 6.5.2 recommends SETTINGS_MAX_CONCURRENT_STREAMS be no smaller than 100 (Go's
// server advertises 250, nginx 128), and Go's Transport opens another connection only when a
// connection's streams are all in use (StrictMaxConcurrentStreams is false by default).
const http2Streams = 100

// HoldOf counts the connections a run can hold at once and the descriptors they cost in
// this process: 2 a connection with no link (client socket, server's accepted socket), 4
// with the link's proxy (its two sockets), and behind a balancer its two sockets, plus 2
// more when the backend hop has its own link (8 a connection with both links). A real
// server or a real client program keeps its own sockets in its own process.
func HoldOf(st scenario.Settings) Hold {
	l := st.Load
	inFlight := l.Concurrency
	if inFlight <= 0 {
		inFlight = l.Requests // an open model with no cap
	}
	inFlight = min(max(inFlight, 1), max(l.Requests, 1))
	if l.Rate == 0 && l.Concurrency <= 1 {
		inFlight = 1
	}
	conns := inFlight + 1 // and one being replaced
	if shape.HTTP2(st) && st.Client.Implementation != "go-net-http" {
		// Streams, not connections: a 10,000-request burst needs ceil(10000/streams) of them.
		// go-net-http keeps Go's Transport as it is, which dials once per request waiting
		// for the first connection (see engine/client's stdClient): counted as HTTP/1.1.
		streams := st.Server.HTTP2MaxStreams
		if streams <= 0 {
			streams = http2Streams
		}
		conns = (inFlight+streams-1)/streams + 1
	}
	if m := st.Client.MaxConns; m > 0 {
		conns = min(conns, m+1)
	}
	var parts []string
	per := 0
	add := func(n int, what string) {
		per += n
		parts = append(parts, what)
	}
	if st.Client.Exec == nil {
		add(1, "client")
	}
	if !shape.Direct(st) {
		add(2, "link proxy ×2")
	}
	if st.Balancer != nil {
		add(1, "balancer")
	}
	server := 0
	if !st.Server.Real() {
		server = 1
	}
	h := Hold{Conns: conns}
	if st.Balancer == nil {
		add(server, "server")
		h.FDs = conns * per
		h.Per = fmt.Sprintf("%d connections × %d (%s)", conns, per, strings.Join(parts, ", "))
		return h
	}
	h.FDs = conns * per
	h.Per = fmt.Sprintf("%d connections × %d (%s)", conns, per, strings.Join(parts, ", "))
	// Each balancer's backend connections: its own socket, the link's two when one is
	// between, and the next balancer's socket or the server's.
	bs := st.Balancers()
	backend := conns
	for i, b := range bs {
		if m := b.Backend.MaxConns; m > 0 {
			backend = min(backend, m+1)
		}
		perBackend, link, next := 1, !shape.DirectBehind(st, i), server
		if link {
			perBackend += 2
		}
		if i < len(bs)-1 {
			next = 1
		}
		perBackend += next
		h.FDs += backend * perBackend
		h.Per += fmt.Sprintf(" + %d backend connections × %d (balancer's socket%s%s)", backend, perBackend,
			map[bool]string{true: ", backend link proxy ×2"}[link],
			map[bool]string{true: map[bool]string{true: ", next balancer", false: ", server"}[i < len(bs)-1]}[next == 1])
	}
	return h
}

// Reserve is what a process keeps beside the runs' connections: logs, result files,
// listeners, the runtime's own descriptors.
const Reserve = 256

// FileBudget raises the descriptor limit toward what the plan wants (the largest runs that
// may overlap) and returns how many descriptors the runs may share. The descriptors already
// open (inherited from the parent, or held by a program embedding kalab) count against the
// limit, so a run is never started with fewer descriptors than it needs, which would surface
// as request errors (resets, refused connects) indistinguishable from the races kalab
// measures. A run that cannot fit is not started: tooBig says why, with the exact count, and
// it ends as an engine error.
func FileBudget(holds []Hold, parallel int) (total int, tooBig func(h Hold) string, err error) {
	sorted := slices.Clone(holds)
	slices.SortFunc(sorted, func(a, b Hold) int { return b.FDs - a.FDs })
	largest := sorted[0]
	sum := 0 // the largest runs that could overlap
	for _, h := range sorted[:min(parallel, len(sorted))] {
		sum += h.FDs
	}
	open := OpenDescriptors()
	if err := kernel.RaiseFileLimit(uint64(sum + Reserve + open)); err != nil {
		// As far as it goes: the largest run alone may still fit.
		_ = kernel.RaiseFileLimit(uint64(largest.FDs + Reserve + open))
	}
	cur, err := kernel.FileLimit()
	if err != nil {
		return 0, nil, err
	}
	limit := int(min(cur, 1<<40))
	free := max(limit-Reserve-open, 0)
	tooBig = func(h Hold) string {
		if h.FDs <= free {
			return ""
		}
		return "not started: " + (&DescriptorError{Need: h.FDs + Reserve + open, Run: h.FDs, Detail: h.Per, Limit: limit, Open: open}).Error()
	}
	return max(free, 1), tooBig, nil
}

// DescriptorError says a run cannot get the file descriptors it would hold.
type DescriptorError struct {
	Need   int    // the limit the run needs: Run + the reserve + Open
	Run    int    // what the run's connections hold
	Detail string // how Run was counted
	Limit  int    // the limit the process could reach (the hard limit, unless root)
	Open   int    // descriptors already open in the process
}

func (e *DescriptorError) Error() string {
	return fmt.Sprintf("needs %d file descriptors: %d for %s, %d reserved, %d already open; "+
		"the limit is %d: raise it (ulimit -Hn, or LimitNOFILE= for a service) or simulate fewer connections",
		e.Need, e.Run, e.Detail, Reserve, e.Open, e.Limit)
}

// OpenDescriptors counts the process's open file descriptors (/proc/self/fd on Linux,
// /dev/fd elsewhere); 0 where neither can be read.
func OpenDescriptors() int {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			return max(len(ents)-1, 0) // the directory's own descriptor while it is read
		}
	}
	return 0
}
