package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/target"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Axis is one parameter of a two-parameter map: N values from Lo to Hi, ends included.
type Axis struct {
	Lo, Hi  float64
	N       int
	Integer bool
}

// values lists the axis's values without repeats.
func (a Axis) values() []float64 {
	s := &searcher{cfg: Config{Lo: a.Lo, Hi: a.Hi, Grid: a.N, Integer: a.Integer}}
	return s.grid()
}

// Map is a grid over two parameters: Cells[i][j] is the point at Ys[i], Xs[j].
type Map struct {
	Xs, Ys   []float64
	Cells    [][]*Step
	Runs     int
	OutOfRun bool
}

// Run2 runs the scenario once with the two parameters set to x and y.
type Run2 func(ctx context.Context, x, y float64, seed int64) (Point, error)

// Grid2 runs every cell of the grid over seeds, each judged as a point of Search is (a
// noisy run rerun up to tries times, never evidence). The whole grid must fit the budget:
// a map with holes would draw a boundary it did not measure.
func Grid2(ctx context.Context, x, y Axis, seeds []int64, budget, tries int, run Run2, observe func(y float64, s Sample)) (*Map, error) {
	if x.N < 2 || y.N < 2 || len(seeds) == 0 || math.IsNaN(x.Lo+x.Hi+y.Lo+y.Hi) || !(x.Lo < x.Hi) || !(y.Lo < y.Hi) {
		return nil, fmt.Errorf("a map needs two ranges from a lower to a higher value, 2 or more points on each, and a seed")
	}
	m := &Map{Xs: x.values(), Ys: y.values()}
	if need := len(m.Xs) * len(m.Ys) * len(seeds); need > budget {
		return nil, fmt.Errorf("the map needs %d runs (%d × %d points × %d seeds), more than the budget of %d", need, len(m.Xs), len(m.Ys), len(seeds), budget)
	}
	if tries <= 0 {
		tries = 3
	}
	for _, yv := range m.Ys {
		yv := yv
		s := &searcher{
			cfg: Config{Seeds: seeds, Budget: budget - m.Runs, MaxTries: tries, Integer: x.Integer},
			run: func(ctx context.Context, xv float64, seed int64) (Point, error) { return run(ctx, xv, yv, seed) },
			res: &Result{},
		}
		if observe != nil {
			s.observe = func(sm Sample) { observe(yv, sm) }
		}
		for _, xv := range m.Xs {
			err := s.evaluate(ctx, xv)
			if err == errBudget {
				m.OutOfRun = true
				break
			}
			if err != nil {
				m.Runs += s.res.Runs
				return m, err
			}
		}
		m.Runs += s.res.Runs
		m.Cells = append(m.Cells, s.res.Steps)
	}
	return m, nil
}

// RowBrackets is each row's changes of verdict along x, as Search reports them.
func (m *Map) RowBrackets() [][]Bracket {
	out := make([][]Bracket, len(m.Cells))
	for i, row := range m.Cells {
		s := &searcher{cfg: Config{Resolution: math.Inf(1)}, res: &Result{Steps: row}}
		out[i] = s.brackets()
	}
	return out
}

// runMap is Invoke with Param2: every cell of the two grids over the seeds, a table, one
// sentence per row and a heat map.
func (o *Options) runMap(ctx context.Context, tx *target.Target, w io.Writer) (*Outcome, error) {
	ty, err := target.Open(o.File, o.Param2, o.Run, o.Until, o.duration2)
	if err == nil {
		err = o.checkEnds(ty, o.lo2, o.hi2)
	}
	if err != nil {
		return nil, &LoadError{Flag: "--param2", Param: o.Param2, Err: err}
	}
	out, jf, err := o.create()
	if err != nil {
		return nil, err
	}
	defer func() { _ = jf.Close() }() // on an early return; closeRecord closes it and says how that went
	enc := json.NewEncoder(jf)
	rec := o.newRecord(tx)
	opt := o.runOptions(out.Dir)
	rows := map[float64]*Runner{}
	run := func(ctx context.Context, x, y float64, seed int64) (Point, error) {
		rn := rows[y]
		if rn == nil {
			t, err := ty.Fix(y, o.Param, o.duration)
			if err != nil {
				return Point{}, err
			}
			rn = &Runner{Target: t, Options: opt, Metric: o.Metric}
			rows[y] = rn
		}
		return rn.Run(ctx, x, seed)
	}
	observe := func(y float64, s Sample) {
		o.Log.Info().Str(o.Param, tx.Format(s.Value)).Str(o.Param2, ty.Format(y)).Int64("seed", s.Seed).Bool("pass", s.Pass).Bool("noisy", s.Noisy).Msg("run ended")
		line := NewSampleLine(s)
		line.Value2 = &y
		_ = enc.Encode(line)
	}
	ax := Axis{Lo: o.lo, Hi: o.hi, N: o.Grid, Integer: o.integer()}
	ay := Axis{Lo: o.lo2, Hi: o.hi2, N: o.Grid2, Integer: !o.duration2 && o.lo2 == float64(int64(o.lo2)) && o.hi2 == float64(int64(o.hi2))}
	m, err := Grid2(ctx, ax, ay, rec.Seeds, o.Budget, o.Tries, run, observe)
	if m == nil {
		return nil, &InputError{err}
	}
	mrec := &MapRecord{Record: "sweep_map", KalabVersion: o.KalabVersion, File: o.File, Run: tx.Run, Param: o.Param, Param2: o.Param2,
		Seeds: rec.Seeds, Budget: o.Budget, Check: rec.Check, Metric: o.Metric}
	mrec.FillMap(m, tx.Format, ty.Format)
	mapTable(w, mrec, tx.Format, ty.Format)
	for _, s := range mrec.Sentences {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintf(w, "%d runs (budget %d, %d seed%s per cell)\n", m.Runs, o.Budget, o.Seeds, plural(o.Seeds))
	out.plot(w, func(pw io.Writer) error { return HeatMap(pw, mrec, tx.Format, ty.Format) })
	return out, closeRecord(ctx, err, enc, jf, mrec)
}

// mapTable writes the grid: one line per value of the second parameter (highest first),
// one column per value of the first; each cell its verdict and the metric's highest value.
func mapTable(w io.Writer, rec *MapRecord, fx, fy func(float64) string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{rec.Param2 + " \\ " + rec.Param}
	for _, x := range rec.Xs {
		head = append(head, fx(x))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i := len(rec.Cells) - 1; i >= 0; i-- {
		line := []string{fy(rec.Ys[i])}
		for _, c := range rec.Cells[i] {
			cell := string(c.Verdict)
			if c.MetricMax != nil {
				cell += fmt.Sprintf(" (%s)", strings.TrimSuffix(fmt.Sprintf("%.4g", *c.MetricMax), ".0"))
			}
			line = append(line, cell)
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	_ = tw.Flush() // output for a terminal, as the Fprint lines around it
	fmt.Fprintln(w)
}
