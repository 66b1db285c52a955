package sweep

import (
	"context"
	"errors"
	"fmt"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/target"
	"path/filepath"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
)

// Runner is the real RunFunc: each value and seed is an ordinary kalab run of the target
// through runner.Execute, recorded under Options.Out like any other, judged by the run's
// checks (or Until) and by the runner's timing judge.
type Runner struct {
	Target  *target.Target
	Options runner.Options // Out, TimeScale, LagTolerance, KalabVersion, Log; Seed is set per run
	// Metric is the metric read from each run's record for the table and the plot.
	Metric string
	// Records, when set, sees each run's record.
	Records func(*report.Run)
}

// Run runs the target once at v with the schedule seeded by seed.
func (r *Runner) Run(ctx context.Context, v float64, seed int64) (Point, error) {
	plan, err := r.Target.Plan(v)
	if err != nil {
		return Point{}, err
	}
	opt := r.Options
	opt.Seed, opt.RunID, opt.Parallel = &seed, "", 1
	out, err := runner.Execute(ctx, plan, opt)
	if out == nil {
		return Point{}, err
	}
	if out.Interrupted {
		if ctx.Err() != nil {
			return Point{}, ctx.Err()
		}
		return Point{}, errors.New("the run was interrupted")
	}
	if err != nil {
		return Point{}, err
	}
	if len(out.Runs) != 1 {
		return Point{}, fmt.Errorf("expected one run, the runner made %d", len(out.Runs))
	}
	rec := out.Runs[0]
	if r.Records != nil {
		r.Records(rec)
	}
	return r.point(rec, out.Dir)
}

// point reads a run's record: its verdict, the metric, and whether it has a verdict at all.
func (r *Runner) point(rec *report.Run, dir string) (Point, error) {
	p := Point{Ref: filepath.ToSlash(dir)}
	if v, ok := rec.Metrics.Flat()[r.Metric]; ok {
		p.Metric, p.HasMetric = v, true
	}
	switch rec.Status {
	case report.StatusPass:
		p.Pass = true
	case report.StatusFail:
	case report.StatusError:
		if rec.Timing != nil && rec.Timing.Noisy {
			p.Noisy, p.HasMetric = true, false
			return p, nil
		}
		return p, fmt.Errorf("the run failed: %s (%s)", rec.Error, dir)
	default:
		return p, fmt.Errorf("the run ended %s: %s (%s)", rec.Status, rec.Reason, dir)
	}
	return p, nil
}
