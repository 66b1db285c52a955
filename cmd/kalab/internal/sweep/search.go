// Package sweep searches one numeric parameter for the value where a run's verdict changes:
// a coarse grid over a range, then bisection around each change, every point run over
// several seeds, within a budget of runs.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Point is the outcome of one run at one value and seed.
type Point struct {
	// Pass is the run's verdict: every deciding check passed.
	Pass bool
	// Noisy means the run has no verdict (its timing was not the scenario's): it is rerun,
	// and never counted as evidence either way.
	Noisy bool
	// Metric is the value of the metric the deciding check reads; HasMetric says it was read.
	Metric    float64
	HasMetric bool
	// Ref names where the run is recorded (a results directory), for the sweep's record.
	Ref string
}

// RunFunc runs the scenario once with the parameter set to value and the schedule seeded
// with seed. An error stops the search: it means the run could not be made, not that it
// failed its checks.
type RunFunc func(ctx context.Context, value float64, seed int64) (Point, error)

// Config bounds a search.
type Config struct {
	Lo, Hi     float64 // the range, Lo < Hi
	Resolution float64 // a bracket this narrow (or narrower) is done; > 0
	Seeds      []int64 // each point runs once per seed; at least one
	Budget     int     // most runs in all, noisy ones included; > 0
	Grid       int     // points of the coarse grid, ends included; >= 2
	// Integer rounds every value to a whole number (a count such as client.max_idle).
	Integer bool
	// MaxTries is how many times one (value, seed) is run while it is noisy before the
	// point is left unjudged; 0 means 3.
	MaxTries int
	// Probes are regions the caller expects a verdict of their own in (the geometry's
	// bands and the stretches between them): after the grid, the search runs the middle of
	// each that no point lies in yet, so a band narrower than the grid's spacing is not
	// stepped over, and bisects from there like anywhere else.
	Probes []Region
}

// Verdict is what a point's evidence says.
type Verdict string

// Verdicts of a point.
const (
	Safe     Verdict = "safe"     // every seed ran and passed
	Unsafe   Verdict = "unsafe"   // at least one seed failed
	Unjudged Verdict = "unjudged" // no failure, but some seed has no verdict (noisy, or the budget ran out)
)

// Sample is one run of the search, in the order it was made.
type Sample struct {
	Value   float64
	Seed    int64
	Attempt int // 1 for the first run of this value and seed
	Point
}

// Step is one value of the parameter and its evidence.
type Step struct {
	Value   float64
	Verdict Verdict
	Samples []Sample // every run at this value, noisy ones included
	// Pass and Fail count the seeds with a verdict; Noisy counts noisy runs (not evidence).
	Pass, Fail, Noisy int
	// MetricMin and MetricMax span the metric over the runs with a verdict; HasMetric says
	// at least one was read.
	MetricMin, MetricMax float64
	HasMetric            bool
}

// Bracket is one change of verdict: Safe is the nearest safe value, Unsafe the nearest
// unsafe one on the other side (Safe may be above or below Unsafe).
type Bracket struct {
	Safe, Unsafe float64
	// Converged is true when |Unsafe - Safe| is at most the resolution (or, for whole
	// numbers, when the two are neighbours).
	Converged bool
	// Stuck says why the bracket could not be narrowed further (an unjudged point inside
	// it); empty when it was not stuck.
	Stuck string
}

// Width is the distance between the bracket's two values.
func (b Bracket) Width() float64 { return math.Abs(b.Unsafe - b.Safe) }

// Result is the whole search.
type Result struct {
	Steps    []*Step // by value
	Brackets []Bracket
	Runs     int  // runs made, noisy ones included
	OutOfRun bool // the budget ended the search before every bracket converged
	// Interrupted: the caller's context ended the search.
	Interrupted bool
	// Grid is the coarse grid's values; Gaps those of them with no verdict (never run, or
	// unjudged). A search with gaps cannot speak for the whole range.
	Grid, Gaps []float64
}

// Settled says whether the search can speak for the whole range: every point of its
// coarse grid has a verdict and nothing stopped it early.
func (r *Result) Settled() bool { return len(r.Gaps) == 0 && !r.Interrupted }

// Step returns the step at value, or nil.
func (r *Result) Step(value float64) *Step {
	for _, s := range r.Steps {
		if s.Value == value {
			return s
		}
	}
	return nil
}

// Check reports what is wrong with a configuration.
func (c Config) Check() error {
	switch {
	case math.IsNaN(c.Lo) || math.IsNaN(c.Hi) || math.IsInf(c.Lo, 0) || math.IsInf(c.Hi, 0) || !(c.Lo < c.Hi):
		return fmt.Errorf("the range must go from a lower to a higher value (got %v..%v)", c.Lo, c.Hi)
	case !(c.Resolution > 0) || math.IsInf(c.Resolution, 0):
		return errors.New("the resolution must be more than 0")
	case len(c.Seeds) == 0:
		return errors.New("at least one seed is needed")
	case c.Budget < 1:
		return errors.New("the budget must be at least one run")
	case c.Grid < 2:
		return errors.New("the coarse grid needs at least 2 points (the range's ends)")
	case c.MaxTries < 0:
		return errors.New("the tries per point cannot be negative")
	}
	return nil
}

// searcher holds one search's state.
type searcher struct {
	cfg     Config
	run     RunFunc
	observe func(Sample)
	res     *Result
}

// Search runs the grid, then bisects each change of verdict until every bracket is at
// most the resolution wide, cannot be narrowed, or the budget is spent. observe, when not
// nil, sees each run as it ends. The result is returned with the error too, holding what
// ran before it.
func Search(ctx context.Context, cfg Config, run RunFunc, observe func(Sample)) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.MaxTries == 0 {
		cfg.MaxTries = 3
	}
	s := &searcher{cfg: cfg, run: run, observe: observe, res: &Result{}}
	s.res.Grid = s.grid()
	err := s.search(ctx)
	if errors.Is(err, errBudget) {
		err = nil
	}
	s.res.Interrupted = ctx.Err() != nil
	return s.finish(), err
}

func (s *searcher) search(ctx context.Context) error {
	for _, v := range s.res.Grid {
		if err := s.evaluate(ctx, v); err != nil {
			return err
		}
	}
	for _, r := range s.cfg.Probes {
		if v, ok := s.probe(r); ok {
			if err := s.evaluate(ctx, v); err != nil {
				return err
			}
		}
	}
	for {
		mids := s.nextValues()
		if len(mids) == 0 {
			return nil
		}
		for _, v := range mids {
			if err := s.evaluate(ctx, v); err != nil {
				return err
			}
		}
	}
}

// errBudget ends the search quietly when the budget cannot pay for another point.
var errBudget = errors.New("budget spent")

// grid is the coarse grid: Grid values from Lo to Hi, ends included, without repeats.
func (s *searcher) grid() []float64 {
	var out []float64
	n := s.cfg.Grid
	for i := 0; i < n; i++ {
		v := s.round(s.cfg.Lo + (s.cfg.Hi-s.cfg.Lo)*float64(i)/float64(n-1))
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// probe is the value to run inside r (within the range), unless a point lies there
// already; ok is false when none is needed or none can be placed (whole numbers).
func (s *searcher) probe(r Region) (v float64, ok bool) {
	lo, hi := math.Max(r.Lo, s.cfg.Lo), math.Min(r.Hi, s.cfg.Hi)
	for _, st := range s.res.Steps {
		if st.Value >= lo && st.Value <= hi && r.Contains(st.Value) {
			return 0, false
		}
	}
	v = s.round(lo + (hi-lo)/2)
	return v, lo <= hi && r.Contains(v) && v >= s.cfg.Lo && v <= s.cfg.Hi
}

func (s *searcher) round(v float64) float64 {
	if s.cfg.Integer {
		return math.Round(v)
	}
	return v
}

// evaluate runs every seed at v (each rerun while noisy, up to MaxTries) and records the
// step. A point the budget cannot pay for in full is not started.
func (s *searcher) evaluate(ctx context.Context, v float64) error {
	if s.res.Runs+len(s.cfg.Seeds) > s.cfg.Budget {
		s.res.OutOfRun = true
		return errBudget
	}
	st := &Step{Value: v}
	judged := 0
	for _, seed := range s.cfg.Seeds {
		for try := 1; try <= s.cfg.MaxTries; try++ {
			if s.res.Runs >= s.cfg.Budget {
				s.res.OutOfRun = true
				break
			}
			if err := ctx.Err(); err != nil {
				s.keepPartial(st)
				return err
			}
			p, err := s.run(ctx, v, seed)
			if err != nil {
				s.keepPartial(st)
				return fmt.Errorf("value %v, seed %d: %w", v, seed, err)
			}
			s.res.Runs++
			sm := Sample{Value: v, Seed: seed, Attempt: try, Point: p}
			st.add(sm)
			if s.observe != nil {
				s.observe(sm)
			}
			if !p.Noisy {
				judged++
				break
			}
		}
	}
	s.insert(st)
	switch {
	case st.Fail > 0:
		st.Verdict = Unsafe
	case judged == len(s.cfg.Seeds):
		st.Verdict = Safe
	default:
		st.Verdict = Unjudged
	}
	return nil
}

// keepPartial keeps the runs of a point the search stopped inside, as unjudged.
func (s *searcher) keepPartial(st *Step) {
	if len(st.Samples) > 0 {
		st.Verdict = Unjudged
		s.insert(st)
	}
}

// add records a sample in the step's counts and metric span.
func (st *Step) add(sm Sample) {
	st.Samples = append(st.Samples, sm)
	switch {
	case sm.Noisy:
		st.Noisy++
		return
	case sm.Pass:
		st.Pass++
	default:
		st.Fail++
	}
	if !sm.HasMetric {
		return
	}
	if !st.HasMetric || sm.Metric < st.MetricMin {
		st.MetricMin = sm.Metric
	}
	if !st.HasMetric || sm.Metric > st.MetricMax {
		st.MetricMax = sm.Metric
	}
	st.HasMetric = true
}

func (s *searcher) insert(st *Step) {
	steps := append(s.res.Steps, st)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Value < steps[j].Value })
	s.res.Steps = steps
}

// brackets lists each change of verdict between neighbouring judged steps; unjudged
// steps are not evidence and are passed over.
func (s *searcher) brackets() []Bracket {
	var out []Bracket
	var prev *Step
	for _, st := range s.res.Steps {
		if st.Verdict == Unjudged {
			continue
		}
		if prev != nil && prev.Verdict != st.Verdict {
			b := Bracket{Safe: prev.Value, Unsafe: st.Value}
			if st.Verdict == Safe {
				b = Bracket{Safe: st.Value, Unsafe: prev.Value}
			}
			b.Converged = s.converged(prev.Value, st.Value)
			if _, ok := s.midpoint(b); !b.Converged && !ok {
				b.Stuck = "every value left inside it has no verdict (noisy runs)"
			}
			out = append(out, b)
		}
		prev = st
	}
	return out
}

func (s *searcher) converged(a, b float64) bool {
	w := math.Abs(b - a)
	if s.cfg.Integer && w <= 1 {
		return true
	}
	return w <= s.cfg.Resolution*(1+1e-9)
}

// midpoint is the next value to run inside a bracket: the middle of the widest gap between
// the values already run there (unjudged ones sit inside a bracket and are not rerun).
// ok is false when no gap is wider than the resolution.
func (s *searcher) midpoint(b Bracket) (mid float64, ok bool) {
	lo, hi := math.Min(b.Safe, b.Unsafe), math.Max(b.Safe, b.Unsafe)
	edges := []float64{lo}
	for _, st := range s.res.Steps {
		if st.Value > lo && st.Value < hi {
			edges = append(edges, st.Value)
		}
	}
	edges = append(edges, hi)
	best := -1.0
	for i := 1; i < len(edges); i++ {
		a, z := edges[i-1], edges[i]
		if s.converged(a, z) || z-a <= best {
			continue
		}
		m := s.round(a + (z-a)/2)
		if s.cfg.Integer {
			m = math.Floor(a + (z-a)/2)
		}
		if m > a && m < z {
			mid, ok, best = m, true, z-a
		}
	}
	return mid, ok
}

// nextValues is the next value to run in every bracket still to narrow.
func (s *searcher) nextValues() []float64 {
	var out []float64
	for _, b := range s.brackets() {
		if b.Converged || b.Stuck != "" {
			continue
		}
		if mid, ok := s.midpoint(b); ok {
			out = append(out, mid)
		}
	}
	return out
}

// finish closes the result: the brackets as the evidence now stands, and the grid points
// left without a verdict.
func (s *searcher) finish() *Result {
	s.res.Brackets = s.brackets()
	for _, v := range s.res.Grid {
		if st := s.res.Step(v); st == nil || st.Verdict == Unjudged {
			s.res.Gaps = append(s.res.Gaps, v)
		}
	}
	return s.res
}
