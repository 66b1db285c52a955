package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/sweep"
)

// runMap is kalab sweep with --param2: every cell of the two grids over the seeds, a
// table, one sentence per row and a heat map.
func runMap(ctx context.Context, f *sweepFlags, tx *sweep.Target, stdout, stderr io.Writer) int {
	ty, err := sweep.Open(f.file, f.param2, f.run, f.until, f.duration2)
	if err == nil {
		err = checkEnds(f, ty, f.lo2, f.hi2)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%v\nkalab sweep: --param2 %s does not load; nothing ran\n", err, f.param2)
		return exitInvalid
	}
	dir, jf, code, ok := sweepOutput(f.out, stderr)
	if !ok {
		return code
	}
	defer jf.Close()
	enc := json.NewEncoder(jf)
	rec := newRecord(f, tx)
	opt := f.runOptions(dir)
	rows := map[float64]*sweep.Runner{}
	run := func(ctx context.Context, x, y float64, seed int64) (sweep.Point, error) {
		rn := rows[y]
		if rn == nil {
			t, err := ty.Fix(y, f.param, f.duration)
			if err != nil {
				return sweep.Point{}, err
			}
			rn = &sweep.Runner{Target: t, Options: opt, Metric: f.metric}
			rows[y] = rn
		}
		return rn.Run(ctx, x, seed)
	}
	observe := func(y float64, s sweep.Sample) {
		f.log.Info().Str(f.param, tx.Format(s.Value)).Str(f.param2, ty.Format(y)).Int64("seed", s.Seed).Bool("pass", s.Pass).Bool("noisy", s.Noisy).Msg("run ended")
		line := sweep.NewSampleLine(s)
		line.Value2 = &y
		_ = enc.Encode(line)
	}
	ax := sweep.Axis{Lo: f.lo, Hi: f.hi, N: f.grid, Integer: f.integer()}
	ay := sweep.Axis{Lo: f.lo2, Hi: f.hi2, N: f.grid2, Integer: !f.duration2 && f.lo2 == float64(int64(f.lo2)) && f.hi2 == float64(int64(f.hi2))}
	m, err := sweep.Grid2(ctx, ax, ay, rec.Seeds, f.budget, f.tries, run, observe)
	if m == nil {
		fmt.Fprintf(stderr, "kalab sweep: %v\n", err)
		return exitInvalid
	}
	mrec := &sweep.MapRecord{Record: "sweep_map", KalabVersion: kalabVersion(), File: f.file, Run: tx.Run, Param: f.param, Param2: f.param2,
		Seeds: rec.Seeds, Budget: f.budget, Check: rec.Check, Metric: f.metric}
	mrec.FillMap(m, tx.Format, ty.Format)
	mapTable(stdout, mrec, tx.Format, ty.Format)
	for _, s := range mrec.Sentences {
		fmt.Fprintln(stdout, s)
	}
	fmt.Fprintf(stdout, "%d runs (budget %d, %d seed%s per cell)\n", m.Runs, f.budget, f.seeds, plural(f.seeds))
	if err := atomicfile.Write(filepath.Join(dir, "plot.html"), func(w io.Writer) error { return sweep.HeatMap(w, mrec, tx.Format, ty.Format) }); err != nil {
		fmt.Fprintf(stderr, "kalab sweep: plot: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "plot: %s\n", filepath.Join(dir, "plot.html"))
	}
	return closeSweep(ctx, err, enc, mrec, dir, exitOK, stderr)
}

// mapTable writes the grid: one line per value of the second parameter (highest first),
// one column per value of the first; each cell its verdict and the metric's highest value.
func mapTable(w io.Writer, rec *sweep.MapRecord, fx, fy func(float64) string) {
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
	tw.Flush()
	fmt.Fprintln(w)
}

// checkEnds loads the target at both ends of a range, with the real-server checks.
func checkEnds(f *sweepFlags, t *sweep.Target, lo, hi float64) error {
	for _, v := range []float64{lo, hi} {
		plan, err := t.Plan(v)
		if err == nil {
			if ds := runner.Check(plan, runner.CheckOptions{TimeScale: f.timeScale}); len(ds) > 0 {
				err = ds
			}
		}
		if err == nil && f.timeScaleSet {
			err = plan.CheckTimeScale(f.timeScale)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
