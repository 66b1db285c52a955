package sweep

import (
	"context"
	"fmt"
	"math"
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
