package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// threshold is a fake run: a value passes for a seed when it is at most that seed's
// boundary (the stale race: a client idle timeout at or below the first racing pause).
func threshold(bounds map[int64]float64) RunFunc {
	return func(_ context.Context, v float64, seed int64) (Point, error) {
		b := bounds[seed]
		errs := 0.0
		if v > b {
			errs = math.Ceil((v - b) * 10)
		}
		return Point{Pass: v <= b, Metric: errs, HasMetric: true}, nil
	}
}

func cfg(seeds ...int64) Config {
	return Config{Lo: 1, Hi: 2.5, Resolution: 0.05, Seeds: seeds, Budget: 1000, Grid: 5}
}

func only(t *testing.T, r *Result) Bracket {
	t.Helper()
	if len(r.Brackets) != 1 {
		t.Fatalf("want one bracket, got %+v", r.Brackets)
	}
	return r.Brackets[0]
}

func TestBisectionConvergesToTheResolution(t *testing.T) {
	t.Parallel()
	r, err := Search(context.Background(), cfg(1), threshold(map[int64]float64{1: 1.853}), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := only(t, r)
	if !b.Converged || b.Width() > 0.05 || b.Safe > 1.853 || b.Unsafe <= 1.853 || b.Safe >= b.Unsafe {
		t.Fatalf("bracket %+v does not hold 1.853 within 0.05", b)
	}
	// 5 grid points 0.375 apart, then 0.1875, 0.09375, 0.046875: 3 bisections.
	if r.Runs != 8 || len(r.Steps) != 8 {
		t.Errorf("runs %d, steps %d; want 8 and 8", r.Runs, len(r.Steps))
	}
}

func TestSafeAboveUnsafeBelow(t *testing.T) {
	t.Parallel()
	// The balancer case: a backend idle timeout is safe above a boundary.
	run := func(_ context.Context, v float64, _ int64) (Point, error) { return Point{Pass: v >= 6.82}, nil }
	c := Config{Lo: 6, Hi: 8, Resolution: 0.05, Seeds: []int64{1}, Budget: 100, Grid: 5}
	r, err := Search(context.Background(), c, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := only(t, r)
	if !b.Converged || b.Safe < 6.82 || b.Unsafe >= 6.82 || b.Safe-b.Unsafe > 0.05 {
		t.Fatalf("bracket %+v", b)
	}
}

func TestSeedsDisagreeingWidenTheBracket(t *testing.T) {
	t.Parallel()
	bounds := map[int64]float64{1: 1.95, 2: 1.853, 3: 1.91}
	r, err := Search(context.Background(), cfg(1, 2, 3), threshold(bounds), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := only(t, r)
	// Safe only where every seed passes: the bracket is around the lowest boundary, and
	// the points between the seeds' boundaries are unsafe with some seeds passing.
	if !b.Converged || b.Safe > 1.853 || b.Unsafe <= 1.853 {
		t.Fatalf("bracket %+v is not at the most cautious seed's boundary 1.853", b)
	}
	mixed := false
	for _, st := range r.Steps {
		if st.Verdict == Unsafe && st.Pass > 0 {
			mixed = true
		}
		if st.Pass+st.Fail != 3 {
			t.Errorf("step %v has %d seeds with a verdict; want 3", st.Value, st.Pass+st.Fail)
		}
	}
	if !mixed {
		t.Error("no step had seeds disagreeing; the test no longer covers them")
	}
	one, _ := Search(context.Background(), cfg(1), threshold(bounds), nil)
	if ob := only(t, one); ob.Safe <= b.Safe {
		t.Errorf("seed 1 alone gives %+v; three seeds %+v should sit lower", ob, b)
	}
}

func TestNoisyPointsAreNotEvidence(t *testing.T) {
	t.Parallel()
	// Every first attempt is noisy and says the opposite of the truth; the second attempt
	// tells the truth. The answer must be the truth's.
	tries := map[[2]float64]int{}
	truth := threshold(map[int64]float64{1: 1.853, 2: 1.853})
	run := func(ctx context.Context, v float64, seed int64) (Point, error) {
		k := [2]float64{v, float64(seed)}
		tries[k]++
		p, _ := truth(ctx, v, seed)
		if tries[k] == 1 {
			return Point{Pass: !p.Pass, Noisy: true, Metric: 99, HasMetric: true}, nil
		}
		return p, nil
	}
	r, err := Search(context.Background(), cfg(1, 2), run, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := only(t, r)
	if !b.Converged || b.Safe > 1.853 || b.Unsafe <= 1.853 {
		t.Fatalf("bracket %+v", b)
	}
	for _, st := range r.Steps {
		if st.Noisy != 2 || st.Pass+st.Fail != 2 || st.MetricMax == 99 {
			t.Errorf("step %v: noisy %d, judged %d, metric max %v", st.Value, st.Noisy, st.Pass+st.Fail, st.MetricMax)
		}
	}
	if r.Runs != 2*2*len(r.Steps) {
		t.Errorf("runs %d; want every (value, seed) twice", r.Runs)
	}
}

func TestAlwaysNoisyPointIsUnjudged(t *testing.T) {
	t.Parallel()
	truth := threshold(map[int64]float64{1: 1.853})
	run := func(ctx context.Context, v float64, seed int64) (Point, error) {
		if v == 1.75 { // the grid point below the boundary never has a verdict
			return Point{Pass: false, Noisy: true}, nil
		}
		return truth(ctx, v, seed)
	}
	r, err := Search(context.Background(), cfg(1), run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Step(1.75); st == nil || st.Verdict != Unjudged || st.Noisy != 3 {
		t.Fatalf("step 1.75: %+v", st)
	}
	b := only(t, r)
	if b.Safe > 1.853 || b.Unsafe <= 1.853 || !b.Converged {
		t.Fatalf("bracket %+v", b)
	}
}

func TestBudgetIsHonoured(t *testing.T) {
	t.Parallel()
	for _, budget := range []int{1, 3, 10, 16, 17} {
		c := cfg(1, 2, 3)
		c.Budget = budget
		calls := 0
		run := func(ctx context.Context, v float64, seed int64) (Point, error) {
			calls++
			return threshold(map[int64]float64{1: 1.853, 2: 1.853, 3: 1.853})(ctx, v, seed)
		}
		r, err := Search(context.Background(), c, run, nil)
		if err != nil {
			t.Fatal(err)
		}
		if calls > budget || r.Runs != calls {
			t.Errorf("budget %d: %d calls, %d runs counted", budget, calls, r.Runs)
		}
		if !r.OutOfRun {
			t.Errorf("budget %d: the search converged within it (%d runs); it should not", budget, calls)
		}
		if calls != budget/3*3 {
			t.Errorf("budget %d: %d calls; a point is started only when all its seeds can run", budget, calls)
		}
	}
}

func TestErrorStopsTheSearch(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	run := func(_ context.Context, v float64, _ int64) (Point, error) {
		if v > 2 {
			return Point{}, boom
		}
		return Point{Pass: true}, nil
	}
	r, err := Search(context.Background(), cfg(1), run, nil)
	if !errors.Is(err, boom) || r == nil || r.Runs != 3 || len(r.Steps) != 3 {
		t.Fatalf("err %v, result %+v", err, r)
	}
}

func TestIntegerValues(t *testing.T) {
	t.Parallel()
	run := func(_ context.Context, v float64, _ int64) (Point, error) { return Point{Pass: v >= 7}, nil }
	c := Config{Lo: 1, Hi: 20, Resolution: 1, Seeds: []int64{1}, Budget: 100, Grid: 4, Integer: true}
	r, err := Search(context.Background(), c, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := only(t, r)
	if b.Safe != 7 || b.Unsafe != 6 || !b.Converged {
		t.Fatalf("bracket %+v; want safe 7, unsafe 6", b)
	}
	for _, st := range r.Steps {
		if st.Value != math.Round(st.Value) {
			t.Errorf("value %v is not whole", st.Value)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{Lo: 2, Hi: 1, Resolution: 1, Seeds: []int64{1}, Budget: 1, Grid: 2},
		{Lo: 1, Hi: 2, Resolution: 0, Seeds: []int64{1}, Budget: 1, Grid: 2},
		{Lo: 1, Hi: 2, Resolution: 1, Budget: 1, Grid: 2},
		{Lo: 1, Hi: 2, Resolution: 1, Seeds: []int64{1}, Budget: 0, Grid: 2},
		{Lo: 1, Hi: 2, Resolution: 1, Seeds: []int64{1}, Budget: 1, Grid: 1},
		{Lo: math.NaN(), Hi: 2, Resolution: 1, Seeds: []int64{1}, Budget: 1, Grid: 2},
	}
	for i, c := range bad {
		if c.Check() == nil {
			t.Errorf("config %d (%+v) accepted", i, c)
		}
	}
}

func TestBudgetCountsNoisyReruns(t *testing.T) {
	t.Parallel()
	// Every run is noisy: each (value, seed) is tried MaxTries times, and the budget still
	// bounds the calls, even inside a point.
	for _, budget := range []int{4, 5, 20} {
		calls := 0
		run := func(context.Context, float64, int64) (Point, error) { calls++; return Point{Noisy: true}, nil }
		c := cfg(1, 2)
		c.Budget = budget
		r, err := Search(context.Background(), c, run, nil)
		if err != nil {
			t.Fatal(err)
		}
		if calls != budget || r.Runs != budget || !r.OutOfRun || len(r.Brackets) != 0 {
			t.Errorf("budget %d: %d calls, %d runs, out %v, brackets %v", budget, calls, r.Runs, r.OutOfRun, r.Brackets)
		}
	}
}

// TestShortSweepClaimsNothingOfTheRange: a budget of 1 run judges the first grid point
// only. The search is not settled, its gaps are the other 4 grid points, and its sentence
// says what it knows, never "safe over the whole range", though 2.5 fails. An interrupted
// search says so the same way. With the budget the grid needs and no failure, it is.
func TestShortSweepClaimsNothingOfTheRange(t *testing.T) {
	t.Parallel()
	run := threshold(map[int64]float64{1: 2.4}) // 2.5 fails
	c := cfg(1)
	c.Budget = 1
	r, err := Search(context.Background(), c, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Settled() || len(r.Gaps) != 4 || r.Gaps[0] != 1.375 || !r.OutOfRun {
		t.Fatalf("settled %v, gaps %v, out of budget %v; want unsettled with the 4 grid points after 1", r.Settled(), r.Gaps, r.OutOfRun)
	}
	rec := &Record{Param: "client.idle_timeout", Lo: 1, Hi: 2.5, Budget: 1, Check: "errors == 0", Seeds: []int64{1}}
	format := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	got := strings.Join(Sentences(rec, r, format), "\n")
	want := "client.idle_timeout: no boundary found among the 1 point judged, and nothing is said of the whole range 1..2.5: " +
		"4 of the 5 grid points have no verdict (1.375, 1.75, 2.125, 2.5): the budget of 1 run was spent (--budget)"
	if got != want {
		t.Errorf("sentence\n%s\nwant\n%s", got, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopAfter := func(c context.Context, v float64, seed int64) (Point, error) {
		cancel()
		return run(c, v, seed)
	}
	r, _ = Search(ctx, cfg(1), stopAfter, nil)
	if r.Settled() || !r.Interrupted || !strings.Contains(strings.Join(Sentences(rec, r, format), " "), "the sweep was interrupted") {
		t.Errorf("an interrupted search: settled %v, interrupted %v, %q", r.Settled(), r.Interrupted, Sentences(rec, r, format))
	}

	r, _ = Search(context.Background(), cfg(1), threshold(map[int64]float64{1: 9}), nil)
	if s := Sentences(rec, r, format); !r.Settled() || !strings.HasPrefix(s[0], "client.idle_timeout is safe over the whole range 1..2.5") {
		t.Errorf("a full grid with no failure: settled %v, %q", r.Settled(), s)
	}
}

// TestGeometrySentence: the geometry's first edge inside the bracket (or within one
// resolution of it) agrees; one further off says how far and why they can differ.
func TestGeometrySentence(t *testing.T) {
	t.Parallel()
	format := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	rec := &Record{Lo: 1, Hi: 2.5, Resolution: 0.05, Prediction: &Prediction{Bound: 1.85, Edges: []float64{1.85}}}
	for _, c := range []struct {
		safe, unsafe float64
		want         string
	}{
		{1.84375, 1.890625, "the geometry agrees: its boundary 1.85 lies within one resolution of the bracket 1.84375..1.890625"},
		{1.75, 1.81, "the geometry agrees"},
		{1.19, 1.28, "the geometry disagrees: its edge 1.85 has no bracket within one resolution; the bracket 1.19..1.28 has no edge of the geometry within one resolution (resolution 0.05)."},
		{1.9, 1.84, "the geometry disagrees: its edge 1.85 has no bracket within one resolution; the bracket 1.84..1.9 has no edge"}, // the other way round
	} {
		res := &Result{Brackets: []Bracket{{Safe: c.safe, Unsafe: c.unsafe}}}
		if got := geometrySentence(rec, res, format); !strings.HasPrefix(got, c.want) {
			t.Errorf("bracket %v..%v: %q, want %q...", c.safe, c.unsafe, got, c.want)
		}
	}
}

// band is a fake run unsafe strictly inside (lo, hi): a server idle timeout racing the
// pauses of one narrow window.
func band(lo, hi float64) RunFunc {
	return func(_ context.Context, v float64, _ int64) (Point, error) {
		return Point{Pass: !(v > lo && v < hi)}, nil
	}
}

// A band of 220 ms inside a grid 750 ms apart (5, 5.75, 6.5, 7.25, 8): the grid alone passes
// everywhere, so without probes the search finds no boundary; with the geometry's band as
// a probe it runs 6.03 (the band's middle), then bisects both edges: two brackets, each
// holding its edge, each within the resolution.
func TestProbesFindABandTheGridStepsOver(t *testing.T) {
	t.Parallel()
	c := Config{Lo: 5, Hi: 8, Resolution: 0.09375, Seeds: []int64{1}, Budget: 100, Grid: 5}
	r, err := Search(context.Background(), c, band(5.92, 6.14), nil)
	if err != nil || len(r.Brackets) != 0 {
		t.Fatalf("without probes: brackets %+v (%v); the grid should step over the band", r.Brackets, err)
	}
	p := &Prediction{Edges: []float64{5.92, 6.14}}
	c.Probes = p.Probes(c.Lo, c.Hi, c.Resolution)
	if len(c.Probes) != 3 || !c.Probes[1].Unsafe || c.Probes[1].Lo != 5.92 || c.Probes[1].Hi != 6.14 {
		t.Fatalf("probes %+v; want the stretch below, the band 5.92..6.14 and the stretch above", c.Probes)
	}
	r, err = Search(context.Background(), c, band(5.92, 6.14), nil)
	var mid *Step
	for _, st := range r.Steps {
		if math.Abs(st.Value-6.03) < 1e-9 {
			mid = st
		}
	}
	if err != nil || mid == nil || mid.Verdict != Unsafe {
		t.Fatalf("the band's middle 6.03 was not run unsafe (%v)", err)
	}
	if len(r.Brackets) != 2 {
		t.Fatalf("brackets %+v; want one at each edge", r.Brackets)
	}
	for i, e := range p.Edges {
		b := r.Brackets[i]
		if lo, hi := span(b); !b.Converged || e < lo || e >= hi || (i == 0) != (b.Safe < b.Unsafe) {
			t.Errorf("bracket %+v does not hold the edge %v", b, e)
		}
	}
	rec := &Record{Param: "server.idle_timeout", Lo: 5, Hi: 8, Resolution: c.Resolution, Check: "status_5xx == 0", Seeds: []int64{1}, Prediction: p}
	format := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	got := strings.Join(Sentences(rec, r, format), "\n")
	b0, b1 := r.Brackets[0], r.Brackets[1]
	for _, want := range []string{
		fmt.Sprintf("server.idle_timeout fails from %v to %v and passes at %v and %v: an unsafe band inside the range", b0.Unsafe, b1.Unsafe, b0.Safe, b1.Safe),
		"the geometry agrees: its boundary 5.92 lies within one resolution", "its boundary 6.14 lies within one resolution",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sentences\n%s\nwant %q", got, want)
		}
	}
}

// With a band inside the range and every point passing (the runs and the geometry part, or
// the check does not see the race), the sentence never calls the range safe; without a
// band in the range it does.
func TestNoSafeRangeOverABand(t *testing.T) {
	t.Parallel()
	pass := func(context.Context, float64, int64) (Point, error) { return Point{Pass: true}, nil }
	format := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, c := range []struct {
		edges []float64
		want  string
	}{
		{[]float64{5.92, 6.14}, "server.idle_timeout: status_5xx == 0 at every seed of every point judged, but the range 5..8 is not called safe: the geometry puts a race in 5.92..6.14, where 1 point passed too"},
		{[]float64{8.2, 8.6}, "server.idle_timeout is safe over the whole range 5..8"},
		{nil, "server.idle_timeout is safe over the whole range 5..8"},
	} {
		p := &Prediction{Edges: c.edges}
		cfg := Config{Lo: 5, Hi: 8, Resolution: 0.1, Seeds: []int64{1}, Budget: 100, Grid: 5, Probes: p.Probes(5, 8, 0.1)}
		r, err := Search(context.Background(), cfg, pass, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := &Record{Param: "server.idle_timeout", Lo: 5, Hi: 8, Resolution: 0.1, Check: "status_5xx == 0", Seeds: []int64{1}, Prediction: p}
		if got := Sentences(rec, r, format); len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("edges %v: %q, want %q...", c.edges, got, c.want)
		}
	}
}
