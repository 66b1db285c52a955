package load

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Spec{Requests: 10}
	tests := []struct {
		name    string
		spec    Spec
		wantErr bool
	}{
		{"minimal", ok, false},
		{"bursts with range", Spec{Requests: 1000, Burst: 10, PauseMin: time.Second, PauseMax: 2 * time.Second, Seed: 7}, false},
		{"fixed pause", Spec{Requests: 10, Burst: 2, PauseMin: time.Second, PauseMax: time.Second}, false},
		{"open poisson", Spec{Requests: 10, Rate: 5, Poisson: true, Concurrency: 3}, false},
		{"all at once", Spec{Requests: 50, Concurrency: 50}, false},
		{"zero requests", Spec{}, true},
		{"negative requests", Spec{Requests: -1}, true},
		{"too many requests", Spec{Requests: MaxRequests + 1}, true},
		{"negative concurrency", Spec{Requests: 1, Concurrency: -1}, true},
		{"negative burst", Spec{Requests: 1, Burst: -1}, true},
		{"negative pause", Spec{Requests: 1, Burst: 1, PauseMin: -1}, true},
		{"inverted pause", Spec{Requests: 1, Burst: 1, PauseMin: 2, PauseMax: 1}, true},
		{"pause without burst", Spec{Requests: 1, PauseMin: 1, PauseMax: 1}, true},
		{"negative rate", Spec{Requests: 1, Rate: -1}, true},
		{"NaN rate", Spec{Requests: 1, Rate: math.NaN()}, true},
		{"infinite rate", Spec{Requests: 1, Rate: math.Inf(1)}, true},
		{"poisson without rate", Spec{Requests: 1, Poisson: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

func TestPausesDeterministic(t *testing.T) {
	t.Parallel()
	s := Spec{Requests: 1000, Burst: 10, PauseMin: 1500 * time.Millisecond, PauseMax: 2500 * time.Millisecond, Seed: 7}
	a, b := Pauses(s), Pauses(s)
	if len(a) != 99 {
		t.Fatalf("len(Pauses) = %d, want 99 (one between each of 100 bursts)", len(a))
	}
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different pause sequences")
	}
	for i, p := range a {
		if p < s.PauseMin || p > s.PauseMax {
			t.Fatalf("pause %d = %v outside [%v, %v]", i, p, s.PauseMin, s.PauseMax)
		}
	}
	if slices.Min(a) == slices.Max(a) {
		t.Fatal("a 1 s range produced 99 identical pauses")
	}
	// The draws must cover the range, not cluster: both halves are hit.
	var low, high int
	for _, p := range a {
		if p < 2*time.Second {
			low++
		} else {
			high++
		}
	}
	if low < 20 || high < 20 {
		t.Fatalf("pauses not spread over the range: %d below 2 s, %d above", low, high)
	}

	other := s
	other.Seed = 8
	if slices.Equal(a, Pauses(other)) {
		t.Fatal("seeds 7 and 8 gave the same pause sequence")
	}
	// Poisson arrivals draw from their own stream, so they leave the pauses alone.
	withRate := s
	withRate.Rate, withRate.Poisson = 100, true
	if !slices.Equal(a, Pauses(withRate)) {
		t.Fatal("turning on Poisson arrivals changed the pause sequence")
	}
}

func TestPausesShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		want []time.Duration
	}{
		{"no bursts", Spec{Requests: 10}, nil},
		{"one burst covers all", Spec{Requests: 10, Burst: 10, PauseMin: time.Second, PauseMax: time.Second}, nil},
		{"burst larger than run", Spec{Requests: 5, Burst: 10, PauseMin: time.Second, PauseMax: time.Second}, nil},
		{"fixed", Spec{Requests: 7, Burst: 3, PauseMin: time.Second, PauseMax: time.Second}, []time.Duration{time.Second, time.Second}},
		{"zero pause", Spec{Requests: 4, Burst: 2}, []time.Duration{0}},
		{"invalid", Spec{Requests: 0, Burst: 2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Pauses(tt.spec); !slices.Equal(got, tt.want) {
				t.Fatalf("Pauses = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestArrivals(t *testing.T) {
	t.Parallel()
	even := Arrivals(Spec{Requests: 5, Rate: 4})
	want := []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}
	if !slices.Equal(even, want) {
		t.Fatalf("even arrivals = %v, want %v", even, want)
	}
	restart := Arrivals(Spec{Requests: 4, Rate: 10, Burst: 2})
	if want := []time.Duration{0, 100 * time.Millisecond, 0, 100 * time.Millisecond}; !slices.Equal(restart, want) {
		t.Fatalf("burst arrivals = %v, want %v", restart, want)
	}
	if Arrivals(Spec{Requests: 5}) != nil {
		t.Fatal("closed model has arrival offsets")
	}

	s := Spec{Requests: 20000, Rate: 1000, Poisson: true, Seed: 3}
	p := Arrivals(s)
	if !slices.Equal(p, Arrivals(s)) {
		t.Fatal("same seed gave different Poisson arrivals")
	}
	s.Seed = 4
	if slices.Equal(p, Arrivals(s)) {
		t.Fatal("different seeds gave the same Poisson arrivals")
	}
	// Exponential gaps: mean 1/rate, and the coefficient of variation near 1
	// (evenly spaced arrivals would have 0).
	var sum, sumSq float64
	for i := 1; i < len(p); i++ {
		g := float64(p[i]-p[i-1]) / float64(time.Millisecond)
		if g < 0 {
			t.Fatalf("arrival %d before arrival %d", i, i-1)
		}
		sum += g
		sumSq += g * g
	}
	n := float64(len(p) - 1)
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	if math.Abs(mean-1) > 0.05 {
		t.Fatalf("Poisson mean gap = %.3f ms, want 1 ms within 5%%", mean)
	}
	if cv := sd / mean; cv < 0.9 || cv > 1.1 {
		t.Fatalf("Poisson gap coefficient of variation = %.3f, want about 1", cv)
	}
}

func TestRunSequentialOrder(t *testing.T) {
	t.Parallel()
	var got []int
	var inFlight atomic.Int32
	err := Run(context.Background(), Spec{Requests: 100}, func(_ context.Context, seq int) {
		if inFlight.Add(1) != 1 {
			t.Error("sequential schedule ran two calls at once")
		}
		got = append(got, seq) // sequential: no lock needed, and -race checks that claim
		inFlight.Add(-1)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, 100)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(got, want) {
		t.Fatalf("seqs = %v, want 0..99 in order", got)
	}
}

// trackMax counts calls in flight and remembers the most seen at once.
type trackMax struct {
	cur, max atomic.Int64
	mu       sync.Mutex
	seen     []int
}

func (m *trackMax) enter(seq int) {
	n := m.cur.Add(1)
	for {
		old := m.max.Load()
		if n <= old || m.max.CompareAndSwap(old, n) {
			break
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, seq)
	m.mu.Unlock()
}

func (m *trackMax) leave() { m.cur.Add(-1) }

func (m *trackMax) checkAll(t *testing.T, n int) {
	t.Helper()
	s := slices.Clone(m.seen)
	slices.Sort(s)
	if len(s) != n {
		t.Fatalf("%d calls, want %d", len(s), n)
	}
	for i, v := range s {
		if v != i {
			t.Fatalf("seq %d missing or repeated (sorted seqs %v)", i, s)
		}
	}
}

func TestRunConcurrencyNeverExceeded(t *testing.T) {
	t.Parallel()
	for _, c := range []int{2, 8, 32} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			var m trackMax
			err := Run(context.Background(), Spec{Requests: 200, Concurrency: c}, func(_ context.Context, seq int) {
				m.enter(seq)
				time.Sleep(2 * time.Millisecond)
				m.leave()
			})
			if err != nil {
				t.Fatal(err)
			}
			m.checkAll(t, 200)
			if got := m.max.Load(); got > int64(c) {
				t.Fatalf("concurrency %d exceeded: %d in flight", c, got)
			} else if got < int64(c) {
				t.Fatalf("concurrency %d never reached: at most %d in flight", c, got)
			}
		})
	}
}

func TestRunAllAtOnce(t *testing.T) {
	t.Parallel()
	const n = 50
	var entered sync.WaitGroup
	entered.Add(n)
	all := make(chan struct{})
	go func() { entered.Wait(); close(all) }()
	var timedOut atomic.Bool
	err := Run(context.Background(), Spec{Requests: n, Concurrency: n}, func(context.Context, int) {
		entered.Done()
		// Every call waits for every other: this only completes if all n are in
		// flight together.
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			timedOut.Store(true)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if timedOut.Load() {
		t.Fatal("not all requests were in flight at once")
	}
}

func TestRunBurstPauseStartsAfterBurstCompletes(t *testing.T) {
	t.Parallel()
	const pause = 150 * time.Millisecond
	s := Spec{Requests: 9, Concurrency: 3, Burst: 3, PauseMin: pause, PauseMax: pause}
	starts := make([]time.Time, s.Requests)
	ends := make([]time.Time, s.Requests)
	err := Run(context.Background(), s, func(_ context.Context, seq int) {
		starts[seq] = time.Now()
		// The last call of each burst is the slow one: the pause must wait for it.
		if seq%3 == 2 {
			time.Sleep(120 * time.Millisecond)
		} else {
			time.Sleep(5 * time.Millisecond)
		}
		ends[seq] = time.Now()
	})
	if err != nil {
		t.Fatal(err)
	}
	for b := 1; b < 3; b++ {
		var lastEnd time.Time
		for i := (b - 1) * 3; i < b*3; i++ {
			if ends[i].After(lastEnd) {
				lastEnd = ends[i]
			}
		}
		for i := b * 3; i < (b+1)*3; i++ {
			gap := starts[i].Sub(lastEnd)
			if gap < pause {
				t.Errorf("burst %d request %d started %v after the previous burst completed, want >= %v", b, i, gap, pause)
			}
			if gap > pause+time.Second {
				t.Errorf("burst %d request %d started %v after the previous burst completed, want about %v", b, i, gap, pause)
			}
		}
	}
	// Within a burst the three calls go out together, not one after another.
	for b := range 3 {
		spread := starts[b*3+2].Sub(starts[b*3])
		if spread > 100*time.Millisecond {
			t.Errorf("burst %d: calls spread over %v, want them concurrent", b, spread)
		}
	}
}

func TestRunDrawnPausesAreTaken(t *testing.T) {
	t.Parallel()
	s := Spec{Requests: 8, Burst: 2, PauseMin: 20 * time.Millisecond, PauseMax: 120 * time.Millisecond, Seed: 11}
	want := Pauses(s)
	starts := make([]time.Time, s.Requests)
	ends := make([]time.Time, s.Requests)
	if err := Run(context.Background(), s, func(_ context.Context, seq int) {
		starts[seq] = time.Now()
		ends[seq] = time.Now()
	}); err != nil {
		t.Fatal(err)
	}
	for i, p := range want {
		gap := starts[2*(i+1)].Sub(ends[2*i+1])
		if gap < p || gap > p+time.Second {
			t.Errorf("pause %d: measured %v, drawn %v", i, gap, p)
		}
	}
}

func TestRunRateSpacing(t *testing.T) {
	t.Parallel()
	const gap = 20 * time.Millisecond
	s := Spec{Requests: 20, Rate: 50}
	offsets := make([]time.Duration, s.Requests)
	t0 := time.Now()
	var m trackMax
	if err := Run(context.Background(), s, func(_ context.Context, seq int) {
		offsets[seq] = time.Since(t0)
		m.enter(seq)
		time.Sleep(3 * gap) // longer than the gap: the open model does not wait for it
		m.leave()
	}); err != nil {
		t.Fatal(err)
	}
	m.checkAll(t, s.Requests)
	for i, off := range offsets {
		if due := time.Duration(i) * gap; off < due {
			t.Fatalf("request %d started at %v, before its arrival time %v", i, off, due)
		}
	}
	last := offsets[len(offsets)-1]
	if due := 19 * gap; last > due+time.Second {
		t.Fatalf("last request started at %v, want about %v", last, due)
	}
	if m.max.Load() < 2 {
		t.Fatal("open model never overlapped calls that outlast the arrival gap")
	}
}

func TestRunRateCappedByConcurrency(t *testing.T) {
	t.Parallel()
	const hold = 30 * time.Millisecond
	s := Spec{Requests: 12, Rate: 1000, Concurrency: 2}
	var m trackMax
	start := time.Now()
	if err := Run(context.Background(), s, func(_ context.Context, seq int) {
		m.enter(seq)
		time.Sleep(hold)
		m.leave()
	}); err != nil {
		t.Fatal(err)
	}
	m.checkAll(t, s.Requests)
	if got := m.max.Load(); got != 2 {
		t.Fatalf("max in flight = %d, want the cap 2", got)
	}
	if el := time.Since(start); el < 6*hold {
		t.Fatalf("12 calls of %v, 2 at a time, took %v: cap not applied", hold, el)
	}
}

func TestRunPoissonFollowsArrivals(t *testing.T) {
	t.Parallel()
	s := Spec{Requests: 30, Rate: 100, Poisson: true, Seed: 5}
	due := Arrivals(s)
	offsets := make([]time.Duration, s.Requests)
	t0 := time.Now()
	if err := Run(context.Background(), s, func(_ context.Context, seq int) {
		offsets[seq] = time.Since(t0)
	}); err != nil {
		t.Fatal(err)
	}
	for i := range offsets {
		if offsets[i] < due[i] || offsets[i] > due[i]+time.Second {
			t.Fatalf("request %d started at %v, due at %v", i, offsets[i], due[i])
		}
	}
}

func TestRunCancelSequential(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls []int
	err := Run(ctx, Spec{Requests: 100}, func(_ context.Context, seq int) {
		calls = append(calls, seq)
		if seq == 5 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if len(calls) != 6 {
		t.Fatalf("calls after cancellation: got seqs %v, want 0..5", calls)
	}
}

func TestRunCancelWaitsForInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var active, started atomic.Int32
	err := Run(ctx, Spec{Requests: 1000, Concurrency: 8}, func(_ context.Context, seq int) {
		started.Add(1)
		active.Add(1)
		defer active.Add(-1)
		if seq == 20 {
			cancel()
		}
		// Ignore ctx on purpose: Run must still wait for this call.
		time.Sleep(30 * time.Millisecond)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if n := active.Load(); n != 0 {
		t.Fatalf("Run returned with %d calls still in flight", n)
	}
	// At most the calls already holding a slot when seq 20 cancelled can follow it.
	if n := started.Load(); n > 21+8 {
		t.Fatalf("%d calls started; cancellation at seq 20 with 8 in flight allows at most 29", n)
	}
}

func TestRunCancelDuringPause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var calls atomic.Int32
	start := time.Now()
	err := Run(ctx, Spec{Requests: 10, Burst: 2, PauseMin: 30 * time.Second, PauseMax: 30 * time.Second}, func(context.Context, int) {
		calls.Add(1)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Run took %v to notice cancellation during a 30 s pause", el)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d calls, want the first burst of 2 only", n)
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range []Spec{{Requests: 5}, {Requests: 5, Concurrency: 5}, {Requests: 5, Rate: 10}} {
		var calls atomic.Int32
		err := Run(ctx, s, func(context.Context, int) { calls.Add(1) })
		if !errors.Is(err, context.Canceled) || calls.Load() != 0 {
			t.Fatalf("%+v: Run = %v with %d calls, want context.Canceled and none", s, err, calls.Load())
		}
	}
}

func TestRunInvalid(t *testing.T) {
	t.Parallel()
	called := false
	if err := Run(context.Background(), Spec{Requests: 0}, func(context.Context, int) { called = true }); err == nil {
		t.Fatal("Run accepted zero requests")
	}
	if called {
		t.Fatal("Run called do for an invalid spec")
	}
	if err := Run(context.Background(), Spec{Requests: 1}, nil); err == nil {
		t.Fatal("Run accepted a nil function")
	}
}

func TestExtremeValuesDoNotPanic(t *testing.T) {
	t.Parallel()
	p := Pauses(Spec{Requests: 4, Burst: 1, PauseMax: math.MaxInt64, Seed: 1})
	if len(p) != 3 {
		t.Fatalf("len = %d, want 3", len(p))
	}
	for _, d := range p {
		if d < 0 {
			t.Fatalf("negative pause %v", d)
		}
	}
	for _, poisson := range []bool{false, true} {
		a := Arrivals(Spec{Requests: 3, Rate: 1e-300, Poisson: poisson})
		for i := 1; i < len(a); i++ {
			if a[i] <= a[i-1] {
				t.Fatalf("poisson=%v: arrivals %v not increasing at a tiny rate", poisson, a)
			}
		}
	}
	// A huge concurrency is just "all at once".
	var n atomic.Int32
	if err := Run(context.Background(), Spec{Requests: 3, Concurrency: math.MaxInt}, func(context.Context, int) { n.Add(1) }); err != nil || n.Load() != 3 {
		t.Fatalf("Run = %v with %d calls", err, n.Load())
	}
}

// TestScheduledIsThePlannedStart: in the open model each call's context carries the instant
// its arrival was planned for, exactly the Arrivals offsets from the burst start, even when
// the concurrency cap makes calls start later (their queue wait); pauses record their lag.
func TestScheduledIsThePlannedStart(t *testing.T) {
	t.Parallel()
	var rec lag.Recorder
	s := Spec{Requests: 6, Concurrency: 1, Rate: 200, Burst: 3, PauseMin: 10 * time.Millisecond, PauseMax: 10 * time.Millisecond, Lag: &rec}
	var mu sync.Mutex
	planned := make([]time.Time, s.Requests)
	started := make([]time.Time, s.Requests)
	err := Run(context.Background(), s, func(ctx context.Context, seq int) {
		at, ok := Scheduled(ctx)
		if !ok {
			t.Errorf("seq %d: no scheduled start", seq)
		}
		mu.Lock()
		planned[seq], started[seq] = at, time.Now()
		mu.Unlock()
		time.Sleep(15 * time.Millisecond) // longer than the 5 ms gap: later calls queue
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Arrivals(s)
	for i := range planned {
		first := i / 3 * 3
		if got := planned[i].Sub(planned[first]); got != want[i] {
			t.Errorf("seq %d planned %v after its burst's start, want %v", i, got, want[i])
		}
		if wait := started[i].Sub(planned[i]); wait < 0 {
			t.Errorf("seq %d started %v before its planned start", i, -wait)
		}
	}
	// seq 2 is planned at 10 ms but its slot frees only after two 15 ms calls.
	if wait := started[2].Sub(planned[2]); wait < 15*time.Millisecond {
		t.Errorf("seq 2 queue wait %v, want >= 15 ms behind the cap", wait)
	}
	// Timers the schedule slept on: the pause, and in each burst the second arrival (the
	// third is already due when the cap frees a slot, which is queueing, not a late timer).
	// A busy machine may reach an arrival only after it is due, so fewer is possible.
	if n := rec.Summary().N; n < 1 || n > 3 {
		t.Errorf("%d lag samples, want 1 to 3 (the pause and up to 2 arrivals; never the queued ones)", n)
	}
	if _, ok := Scheduled(context.Background()); ok {
		t.Error("a context not from Run has no scheduled start")
	}
}

// TestRunSleepsOnTheGivenClock checks that a Spec's Sleep waits out every pause and every
// open-model arrival instead of a Go timer, with the planned instants, and that its false
// (the run's context done) stops the schedule.
func TestRunSleepsOnTheGivenClock(t *testing.T) {
	var calls, wakes []time.Time
	sleep := func(at time.Time, done <-chan struct{}) bool {
		calls = append(calls, at)
		time.Sleep(time.Until(at))
		wakes = append(wakes, time.Now())
		return true
	}
	s := Spec{Requests: 9, Burst: 3, PauseMin: 5 * time.Millisecond, PauseMax: 5 * time.Millisecond, Sleep: sleep}
	if err := Run(context.Background(), s, func(context.Context, int) {}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("Sleep called %d times for 2 pauses", len(calls))
	}
	calls, wakes = nil, nil
	s = Spec{Requests: 4, Rate: 200, Sleep: sleep}
	start := time.Now()
	if err := Run(context.Background(), s, func(context.Context, int) {}); err != nil {
		t.Fatal(err)
	}
	// An arrival already due when the schedule reaches it is not slept for: on a busy
	// machine a sleep can wake past the next arrival. Each arrival missing between two
	// sleeps must be explained by the sleep before it waking that late; one missing at the
	// start or the end, by a schedule that started, or a last sleep that woke, 5 ms late.
	if len(calls) < 1 || len(calls) > 3 {
		t.Fatalf("Sleep called %d times for 3 spaced arrivals", len(calls))
	}
	missing := 3 - len(calls)
	for i := 1; i < len(calls); i++ {
		gap := calls[i].Sub(calls[i-1])
		if gap <= 0 || gap%(5*time.Millisecond) != 0 {
			t.Errorf("arrival %d planned %v after the previous, want a multiple of 5ms", i+1, gap)
		}
		if skipped := gap/(5*time.Millisecond) - 1; skipped > 0 {
			missing -= int(skipped)
			if late := wakes[i-1].Sub(calls[i-1]); late < gap-5*time.Millisecond {
				t.Errorf("%d arrival%s skipped after a sleep that woke only %v late", skipped, map[bool]string{true: "", false: "s"}[skipped == 1], late)
			}
		}
	}
	lastLate := wakes[len(wakes)-1].Sub(calls[len(calls)-1])
	if missing > 0 && lastLate < 5*time.Millisecond && calls[0].Sub(start) < 10*time.Millisecond {
		t.Errorf("%d arrival%s skipped at the start or end of a schedule that was on time (the last sleep woke %v late)", missing, map[bool]string{true: "", false: "s"}[missing == 1], lastLate)
	}
	if len(calls) < 3 {
		t.Logf("the machine was late: %d of 3 arrivals slept for", len(calls))
	}
	var started int
	s = Spec{Requests: 9, Burst: 3, PauseMin: time.Millisecond, PauseMax: time.Millisecond,
		Sleep: func(time.Time, <-chan struct{}) bool { return false }}
	_ = Run(context.Background(), s, func(context.Context, int) { started++ })
	if started != 3 {
		t.Errorf("%d requests started after Sleep returned false at the first pause, want 3", started)
	}
}

// TestFollowsMarksAWorkersNextRequest checks which calls Follows marks: in the closed
// model, those that started because an earlier call returned (the 3rd to 5th of each
// burst of 5 with two in flight), never a burst's first calls and never an open-model
// arrival, even one that queued behind the cap.
func TestFollowsMarksAWorkersNextRequest(t *testing.T) {
	t.Parallel()
	hold := 5 * time.Millisecond
	run := func(s Spec) []bool {
		var mu sync.Mutex
		got := make([]bool, s.Requests)
		err := Run(context.Background(), s, func(ctx context.Context, seq int) {
			mu.Lock()
			got[seq] = Follows(ctx)
			mu.Unlock()
			if hold == 0 {
				return
			}
			// Calls 0 and 1 (and 5 and 6) end together: whichever of them returns second,
			// the call it lets start is still a worker's next request (a follower), even
			// when the schedule loop reaches it only after the slot came free.
			time.Sleep(hold)
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	closed := run(Spec{Requests: 10, Concurrency: 2, Burst: 5, PauseMin: time.Millisecond, PauseMax: time.Millisecond})
	want := []bool{false, false, true, true, true, false, false, true, true, true}
	if !slices.Equal(closed, want) {
		t.Errorf("closed model: Follows %v, want %v", closed, want)
	}
	// Calls that return at once free their slot before the loop comes back for the next
	// one; their successors are still the workers' next requests.
	hold = 0
	if got := run(Spec{Requests: 10, Concurrency: 2, Burst: 5, PauseMin: time.Millisecond, PauseMax: time.Millisecond}); !slices.Equal(got, want) {
		t.Errorf("closed model, calls that return at once: Follows %v, want %v", got, want)
	}
	hold = 5 * time.Millisecond
	open := run(Spec{Requests: 4, Concurrency: 1, Rate: 1000})
	if slices.Contains(open, true) {
		t.Errorf("open model: Follows %v, want none", open)
	}
	if Follows(context.Background()) {
		t.Error("a context not from Run follows nothing")
	}
}
