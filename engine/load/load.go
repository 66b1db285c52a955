package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// MaxRequests bounds Spec.Requests so that a typo in a scenario cannot ask for a
// schedule (or a Pauses slice) that exhausts memory.
const MaxRequests = 10_000_000

// Spec describes one run's request schedule. Durations are already scaled by the
// runner; this package knows nothing of time scale.
type Spec struct {
	// Requests is the total number of requests; 1..MaxRequests.
	Requests int
	// Concurrency is the number of requests in flight. In the closed model (Rate 0)
	// 0 or 1 means sequential and Concurrency == Requests means all at once. In the
	// open model it caps in-flight requests and 0 means unbounded.
	Concurrency int
	// Burst, when > 0, splits the run into bursts of Burst requests; after a burst's
	// last request has completed the schedule pauses before the next burst.
	Burst int
	// PauseMin and PauseMax bound the pause between bursts. Each pause is drawn
	// uniformly from [PauseMin, PauseMax] by a generator seeded with Seed; equal
	// bounds give a fixed pause.
	PauseMin, PauseMax time.Duration
	// Rate, when > 0, selects the open model: requests arrive at Rate per second,
	// evenly spaced or, with Poisson, with exponential gaps.
	Rate float64
	// Poisson makes open-model arrivals a Poisson process; it requires Rate > 0.
	Poisson bool
	// Seed feeds every random draw of the schedule (pauses and Poisson gaps).
	Seed int64
	// Lag, when set, receives how late each pause and each open-model arrival the schedule
	// slept for fired against its planned instant.
	Lag *lag.Recorder
	// Sleep, when set, waits until at or returns false as soon as done closes; the runner
	// passes a precise clock (engine/netsim/clock's Sleeper) here. When nil the schedule sleeps on a Go
	// timer, which on Linux fires up to about a millisecond late.
	Sleep func(at time.Time, done <-chan struct{}) bool
	// Start, when set, runs each call on a goroutine of its own in place of a go statement.
	// The virtual clock passes its network's order here (a step that starts the goroutine
	// once the calls started before have done all they could), so that the calls of a burst,
	// which start at one instant, dial and take pooled connections in seq order rather than
	// in the order Go's scheduler runs their goroutines.
	Start func(call func())
}

type scheduledKey struct{}

// scheduled is what Run tells each call about its place in the schedule.
type scheduled struct {
	at      time.Time
	follows bool
}

// Scheduled returns when the schedule planned the call that received ctx to start: its
// arrival instant in the open model, the moment its slot came free in the closed one. The
// difference to when the call really began is its queue wait. ok is false for a context
// that did not come from Run.
func Scheduled(ctx context.Context) (at time.Time, ok bool) {
	s, ok := ctx.Value(scheduledKey{}).(scheduled)
	return s.at, ok
}

// Follows reports whether the call that received ctx started because an earlier call of
// the closed model returned: the next request of a worker's loop, sent straight after
// the previous one ended (`for (...) await fetch(...)`), as opposed to the first requests
// of a burst, which start when the pause ends. A client whose connection comes back to
// its pool only after the caller's next request was sent (undici) needs to know.
func Follows(ctx context.Context) bool {
	s, _ := ctx.Value(scheduledKey{}).(scheduled)
	return s.follows
}

// Validate reports the first field that makes the spec unusable, naming it as the
// scenario file's load section does.
func (s Spec) Validate() error {
	switch {
	case s.Requests < 1:
		return fmt.Errorf("load.requests: must be at least 1, got %d", s.Requests)
	case s.Requests > MaxRequests:
		return fmt.Errorf("load.requests: must be at most %d, got %d", MaxRequests, s.Requests)
	case s.Concurrency < 0:
		return fmt.Errorf("load.concurrency: must not be negative, got %d", s.Concurrency)
	case s.Burst < 0:
		return fmt.Errorf("load.burst: must not be negative, got %d", s.Burst)
	case s.PauseMin < 0 || s.PauseMax < 0:
		return fmt.Errorf("load.pause: must not be negative, got %v..%v", s.PauseMin, s.PauseMax)
	case s.PauseMax < s.PauseMin:
		return fmt.Errorf("load.pause: max %v is below min %v", s.PauseMax, s.PauseMin)
	case s.Burst == 0 && s.PauseMax > 0:
		// A pause only happens between bursts; without bursts it would be silently ignored.
		return fmt.Errorf("load.pause: set to %v..%v but load.burst is 0, so it would never apply", s.PauseMin, s.PauseMax)
	case math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Rate < 0:
		return fmt.Errorf("load.rate: must be a finite number >= 0, got %v", s.Rate)
	case s.Poisson && s.Rate == 0:
		return errors.New("load.poisson: needs load.rate > 0")
	}
	return nil
}

// bursts returns how many bursts the spec makes.
func (s Spec) bursts() int {
	if s.Burst <= 0 || s.Burst >= s.Requests {
		return 1
	}
	return (s.Requests + s.Burst - 1) / s.Burst
}

// BurstSize returns the size of every burst but possibly the last.
func (s Spec) BurstSize() int {
	if s.Burst <= 0 || s.Burst >= s.Requests {
		return s.Requests
	}
	return s.Burst
}

// Two independent streams derived from the one seed, so that the pause sequence
// does not depend on whether Poisson gaps are drawn between pauses.
const (
	pauseStream   = 0x6b616c61622d7061 // "kalab-pa"
	arrivalStream = 0x6b616c61622d6172 // "kalab-ar"
)

type pauser struct {
	min, max time.Duration
	rng      *rand.Rand
}

func newPauser(s Spec) *pauser {
	return &pauser{min: s.PauseMin, max: s.PauseMax, rng: rand.New(rand.NewPCG(uint64(s.Seed), pauseStream))}
}

func (p *pauser) next() time.Duration {
	if p.max <= p.min {
		return p.min
	}
	// In uint64 the span plus one cannot overflow, even for a pause of MaxInt64.
	return p.min + time.Duration(p.rng.Uint64N(uint64(p.max-p.min)+1))
}

type arrivals struct {
	gap     time.Duration // evenly spaced gap
	rate    float64
	poisson bool
	rng     *rand.Rand
}

func newArrivals(s Spec) *arrivals {
	a := &arrivals{rate: s.Rate, poisson: s.Poisson}
	if s.Rate > 0 {
		a.gap = clampDuration(float64(time.Second) / s.Rate)
	}
	if s.Poisson {
		a.rng = rand.New(rand.NewPCG(uint64(s.Seed), arrivalStream))
	}
	return a
}

// next returns the gap before the following arrival.
func (a *arrivals) next() time.Duration {
	if !a.poisson {
		return a.gap
	}
	return clampDuration(a.rng.ExpFloat64() / a.rate * float64(time.Second))
}

// clampDuration converts nanoseconds to a Duration, capped so that an absurdly low
// rate yields a very long wait rather than an overflowed, negative one.
func clampDuration(ns float64) time.Duration {
	const limit = math.MaxInt64 / 1024 // about 104 days; sums of many stay in range
	if ns >= limit {
		return limit
	}
	return time.Duration(ns)
}

// Pauses returns the pauses Run will take for s, in order: one between each pair of
// consecutive bursts, none after the last. It returns nil for an invalid spec or one
// without bursts.
func Pauses(s Spec) []time.Duration {
	if s.Validate() != nil {
		return nil
	}
	n := s.bursts() - 1
	if n <= 0 {
		return nil
	}
	p := newPauser(s)
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = p.next()
	}
	return out
}

// Arrivals returns the open-model arrival offsets Run aims for, one per request,
// each measured from the start of its burst (the first request of every burst
// arrives at 0). It returns nil for an invalid spec or the closed model.
func Arrivals(s Spec) []time.Duration {
	if s.Validate() != nil || s.Rate == 0 {
		return nil
	}
	a := newArrivals(s)
	size := s.BurstSize()
	out := make([]time.Duration, s.Requests)
	var at time.Duration
	for i := range out {
		if i%size == 0 {
			at = 0
		} else {
			at += a.next()
		}
		out[i] = at
	}
	return out
}

// Run calls do once per request of the schedule s, with seq 0..Requests-1 in issue
// order, and returns when every call has returned.
//
// Closed model (Rate 0): up to max(Concurrency,1) calls run at once; a new call
// starts as soon as one returns. Open model (Rate > 0): call i is due at its
// arrival offset; if Concurrency calls are already in flight the due call waits
// for a free slot and later arrivals keep their own due times, so the schedule
// catches up rather than drifting. With Burst > 0, in both models, the pause
// before the next burst starts once the burst's last call has returned, and the
// arrival clock restarts with each burst.
//
// Run never starts a call after ctx is done. If ctx is done by the time the last
// call returns, Run returns ctx.Err(); an invalid spec returns the Validate error
// and calls nothing.
func Run(ctx context.Context, s Spec, do func(ctx context.Context, seq int)) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("load: invalid schedule: %w", err)
	}
	if do == nil {
		return errors.New("load: invalid schedule: nil request function")
	}
	r := newScheduler(ctx, s, do)
	defer r.stop()
	for r.seq < s.Requests {
		if !r.burst() {
			break
		}
	}
	r.wg.Wait()
	return ctx.Err()
}

// scheduler is one Run: the plan's position, the concurrency slots and the calls in flight.
type scheduler struct {
	ctx    context.Context
	s      Spec
	do     func(ctx context.Context, seq int)
	limit  int           // calls in flight at most (0: no cap, open model only)
	slots  chan struct{} // nil without a cap
	pauses *pauser
	arr    *arrivals
	size   int // calls per burst
	sleep  func(at time.Time, done <-chan struct{}) bool
	stop   func()
	wg     sync.WaitGroup
	seq    int // the next call
}

func newScheduler(ctx context.Context, s Spec, do func(ctx context.Context, seq int)) *scheduler {
	limit := s.Concurrency
	if s.Rate == 0 && limit < 1 {
		limit = 1
	}
	limit = min(limit, s.Requests) // more slots than requests would never be used
	r := &scheduler{ctx: ctx, s: s, do: do, limit: limit, pauses: newPauser(s), arr: newArrivals(s),
		size: s.BurstSize(), sleep: s.Sleep, stop: func() {}}
	if limit > 0 {
		r.slots = make(chan struct{}, limit)
	}
	if r.sleep == nil {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		r.stop = func() { timer.Stop() }
		r.sleep = func(at time.Time, done <-chan struct{}) bool {
			timer.Reset(time.Until(at))
			select {
			case <-done:
				timer.Stop()
				return false
			case <-timer.C:
				return true
			}
		}
	}
	return r
}

// wait sleeps until at, or returns false as soon as ctx is done; it records how late it
// woke. An instant already past when the schedule reaches it is not a late timer but a call
// queued behind the concurrency cap: that shows as the call's queue wait.
func (r *scheduler) wait(at time.Time) bool {
	if time.Until(at) > 0 {
		if !r.sleep(at, r.ctx.Done()) {
			return false
		}
		r.s.Lag.Since(at)
	}
	return r.ctx.Err() == nil
}

// burst starts the next burst's calls and waits for them to return; false when ctx ended
// the schedule.
func (r *scheduler) burst() bool {
	// A burst starts when its pause was planned to end, so a late pause shows as lag and
	// queue wait instead of silently shifting the arrivals after it.
	burstStart := time.Now()
	if r.seq > 0 {
		burstStart = burstStart.Add(r.pauses.next())
		if !r.wait(burstStart) {
			return false
		}
	}
	var due time.Duration
	end := min(r.seq+r.size, r.s.Requests)
	for first := r.seq; r.seq < end; r.seq++ {
		planned := burstStart
		if r.s.Rate > 0 && r.seq > first {
			due += r.arr.next()
			planned = burstStart.Add(due)
			if !r.wait(planned) {
				return false
			}
		}
		// In the closed model every slot is free when a burst starts (the pause begins once
		// the burst's last call returned), so the burst's first limit calls start at once
		// and each later one starts when an earlier call returns: a worker's next request.
		// Counted from the plan, not from whether the slot was still busy when this loop got
		// here: two calls ending together would make that a race between them and this loop.
		follows := r.s.Rate == 0 && r.seq-first >= r.limit
		if !r.acquire() {
			return false
		}
		if r.s.Rate == 0 && r.seq > first {
			planned = time.Now() // closed model: due when its slot came free
		}
		r.launch(r.seq, scheduled{at: planned, follows: follows})
	}
	r.wg.Wait()
	return true
}

// acquire takes a concurrency slot, waiting for one when every slot is busy; false (holding
// nothing) once ctx is done, so a call never starts after it.
func (r *scheduler) acquire() bool {
	if r.slots != nil {
		select {
		case r.slots <- struct{}{}:
		default:
			// Every slot is busy: this call starts when one returns.
			select {
			case r.slots <- struct{}{}:
			case <-r.ctx.Done():
				return false
			}
		}
	}
	// The slot wait may have raced a cancellation; the promise is never to start a call
	// once ctx is done.
	if r.ctx.Err() != nil {
		if r.slots != nil {
			<-r.slots
		}
		return false
	}
	return true
}

// launch runs call seq in its own goroutine, freeing its slot when it returns.
func (r *scheduler) launch(seq int, at scheduled) {
	r.wg.Add(1)
	call := func() {
		defer r.wg.Done()
		if r.slots != nil {
			defer func() { <-r.slots }()
		}
		if r.s.Start != nil && r.ctx.Err() != nil {
			return // done between the schedule's decision and the start: never start a call then
		}
		r.do(context.WithValue(r.ctx, scheduledKey{}, at), seq)
	}
	if r.s.Start != nil {
		r.s.Start(call)
		return
	}
	go call()
}
