package runner

import (
	"context"
	"errors"
	"github.com/kalab-dev/kalab/engine/predict"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/kalab-dev/kalab/engine/topology"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// watchEdges makes a real-clock run whose checks read a count keep what the edge rule
// (judge.EdgeFlip) needs: its late timer events and its requests.
func watchEdges(tm *judge.Timers, st scenario.Settings, jg *judge.Judge) {
	if st.Clock != scenario.ClockVirtual && jg.ReadsCounts() {
		tm.WatchEdges()
	}
}

// modelMs is the time a run spanned on its own clock, in scenario ms: the simulated time
// of a virtual run (model), wall over the time scale of a real one that started (model
// -1), 0 for a run that did not start.
func modelMs(model time.Duration, wall, scale float64) float64 {
	switch {
	case model < 0 && scale > 0:
		return wall / scale
	case model < 0:
		return wall
	}
	return math.Round(float64(model)/float64(time.Microsecond)) / 1000
}

// runTiming is a real-clock run's account of its own timing: its timers judged against
// tol, and what the CPU rule needs to know of its link.
func runTiming(tm *judge.Timers, jg *judge.Judge, tol judge.Tolerance, st scenario.Settings) *report.Timing {
	t := judge.Assess(tm, tol)
	if why := jg.EdgeFlip(tm, st); why != "" && !t.Noisy {
		t.Noisy, t.Reason = true, why
	}
	if st.Network.RTT > 0 { // a run with an RTT is never direct: its link delays
		t.LinkTrips = judge.Trips(st)
		floor := float64(st.Network.RTT.D()) / float64(time.Millisecond)
		t.LatencyFloorMs = &floor
	}
	serverWait(t, tm.ServerWait)
	return t
}

// machineTook records on t what the machine says about CPU pressure and waiting during the
// run. A virtual run records it too, and nothing judges it there. beside says another run
// was in flight in this process during the run (markRun): the process's own share of
// its wait for a core then holds that run's threads too, and all of the wait counts as
// others' (cpu_wait_neighbours_ms equals cpu_wait_ms, beside_other_runs true).
func machineTook(t *report.Timing, pressure lag.Pressure, cpuWait lag.CPUWait, queue lag.RunQueue, beside bool) *report.Timing {
	if share, ok := pressure.Share(); ok {
		v := math.Round(share*1000) / 1000
		t.CPUPressure = &v
	}
	if own, others, ok := cpuWait.Split(); ok {
		if beside {
			own, others = 0, own+others
			t.BesideOtherRuns = true
		}
		v := math.Round(float64(own+others)/float64(time.Microsecond)) / 1000
		n := math.Round(float64(others)/float64(time.Microsecond)) / 1000
		t.CPUWaitMs, t.CPUWaitNeighboursMs = &v, &n
	}
	if d, ok := queue.Mean(); ok {
		v := math.Round(float64(d)/float64(time.Microsecond)) / 1000
		t.RunQueueMs = &v
	}
	return t
}

// runsInFlight and runStarts follow every run of this process (all plans, as the runs of
// two plans in one process share its threads' wait too): a run is beside another when
// one was in flight as it started or one started before it ended.
var (
	runsInFlight atomic.Int64
	runStarts    atomic.Uint64
)

// besideMark is a run's view of the others in flight (markRun, then beside at its end).
type besideMark struct {
	epoch  uint64
	others bool
}

func markRun() besideMark {
	epoch := runStarts.Add(1)
	return besideMark{epoch: epoch, others: runsInFlight.Add(1) > 1}
}

// beside ends the run's mark and reports whether another run was in flight during it.
func (b besideMark) beside() bool {
	runsInFlight.Add(-1)
	return b.others || runStarts.Load() != b.epoch
}

// startSamplers starts what measures the machine's CPU pressure and this process's waits
// for a core over a run. A virtual run starts none: nothing the machine did moved its
// simulated time, so they would judge nothing, and reading every thread's schedstat at its
// start and end was a sixth of the CPU of a run of a few requests. Zero samplers say "not
// measured" (machineTook leaves their fields out).
func startSamplers(virtual bool) (lag.Pressure, lag.CPUWait, lag.Sched, lag.RunQueue) {
	if virtual {
		return lag.Pressure{}, lag.CPUWait{}, lag.Sched{}, lag.RunQueue{}
	}
	return lag.StartPressure(), lag.StartCPUWait(), lag.StartSched(), lag.StartRunQueue()
}

// realTimers judges, on a real-clock run, what needs both its timers and what the machine
// took: a real server's own idle close against its wait for a core, and how far the CPU
// other processes took could have moved the metrics of timers no source watches
// (judge.TimerRanges).
func realTimers(rec *report.Run, st scenario.Settings, tol judge.Tolerance, opt Options) {
	if why := judge.ServerTimerLate(tol, rec.Timing); why != "" && !rec.Timing.Noisy {
		rec.Timing.Noisy, rec.Timing.Reason = true, why
	}
	if opt.LagTolerance >= 0 { // a negative tolerance judges nothing
		rec.Timing.TimerRanges = judge.TimerRanges(st, rec)
	}
}

// serverWait records what a real server program's threads waited for a core (nil: the
// run's server was not one).
func serverWait(t *report.Timing, w *judge.ProgramWait) {
	if w == nil {
		return
	}
	ms := func(d time.Duration) *float64 {
		v := math.Round(float64(d)/float64(time.Microsecond)) / 1000
		return &v
	}
	t.ServerCPUWaitMs, t.ServerCPUWaitNeighboursMs = ms(w.Own+w.Neighbours), ms(w.Neighbours)
}

// settle gives the run its status from how it ended, before its checks.
func settle(rec *report.Run, sc *scenario.Scenario, r *scenario.Run, opt Options, notRun string, err error, interrupted, connsWritten bool) {
	switch {
	case notRun != "" && opt.RequireClients && errors.Is(err, execclient.ErrMissing):
		rec.Status, rec.Error = report.StatusError, notRun+" (--require-clients)"
	case notRun != "":
		markNotRun(rec, notRun, r.Expect)
	case err != nil && interrupted:
		rec.Status, rec.Error = report.StatusInterrupted, "interrupted before the run completed"
	case rec.Timing.Noisy:
		notAResult(rec)
	case err != nil:
		rec.Status, rec.Error = report.StatusError, err.Error()
	default:
		rec.Status = report.StatusPass
		if !opt.SkipRequests {
			rec.RequestsFile = report.RequestsPath(sc.Name, r.Variant)
			if connsWritten {
				rec.ConnectionsFile = report.ConnectionsPath(sc.Name, r.Variant)
			}
		}
	}
}

// expectChecks evaluates the run's expect assertions; one that fails fails the run.
func expectChecks(rec *report.Run, r *scenario.Run, m check.Metrics) {
	for _, a := range r.Expect {
		res := a.Check(m)
		c := report.Check{Kind: "expect", Expr: a.Source, Pass: res.Pass, Observed: res.Observed, File: a.File, Line: a.Line, Col: a.Col}
		if res.Err != nil {
			c.Error = res.Err.Error()
		}
		if !c.Pass {
			rec.Status = report.StatusFail
		}
		rec.Checks = append(rec.Checks, c)
	}
}

// logEnd logs the run's end at the level its status deserves.
func logEnd(log zerolog.Logger, rec *report.Run, m check.Metrics) {
	ev := log.Info()
	if rec.Status == report.StatusError {
		ev = log.Error().Str("error", rec.Error)
	}
	if rec.Status == report.StatusNotRun {
		ev = log.Warn().Str("reason", rec.Reason)
	}
	ev.Str("status", rec.Status).Float64("requests", m.Requests).Float64("errors", m.Errors).
		Float64("connections", m.Connections).Float64("wall_s", math.Round(rec.WallMs)/1000).Msg("run ended")
}

// notAResult marks a noisy run as one without a verdict: none of its checks stand, so it
// can neither pass nor fail. The scheduler reruns it alone, or ends it as an engine error.
func notAResult(rec *report.Run) {
	rec.Status, rec.Error = report.StatusError, "noisy: "+rec.Timing.Reason
	rec.Checks, rec.Baseline, rec.Predicted = []report.Check{}, nil, nil
}

// againstBaseline gates the run on the baseline, when there is one.
func againstBaseline(rec *report.Run, opt Options) {
	if opt.Baseline == nil || rec.Status == report.StatusNotRun || rec.Timing.Noisy {
		return
	}
	opt.Baseline.Apply(rec)
	if rec.Timing.Noisy {
		// The judge found a verdict the machine's other work could have made (a baseline
		// regression inside what it took from the run).
		notAResult(rec)
	}
}

// execute performs one run and returns its record; it never returns without one. Its
// timers report to tm, judged by judge.
func execute(ctx context.Context, w *report.Writer, c *compile.Run, opt Options, tm *judge.Timers, jg *judge.Judge) *report.Run {
	sc, r, st := c.Scenario, c.Source, c.Settings
	var ex *topology.Exec
	if c.Exec != nil {
		ex = &topology.Exec{Config: *c.Exec} // each attempt its own: it keeps the program's identity and report
	}
	rec := &report.Run{
		KalabVersion: opt.KalabVersion, RunID: opt.RunID, Scenario: sc.Name, File: sc.File,
		Variant: r.Variant, Matrix: r.Matrix, Params: paramsJSON(st), TimeScale: st.TimeScale, Clock: st.Clock,
		Seed: st.Load.Seed, StartedAt: time.Now().UTC(), Checks: []report.Check{}, Notes: slices.Clone(c.Notes),
	}
	log := opt.Log.With().Str("scenario", sc.Name).Str("variant", r.Variant).Logger()
	log.Info().Int("requests", st.Load.Requests).Float64("time_scale", st.TimeScale).Msg("run started")
	if opt.Observer != nil {
		opt.Observer.RunStarted(r, st.Load.Requests)
	}
	watchEdges(tm, st, jg)
	start := time.Now()
	mark := markRun()
	pressure, cpuWait, sched, queue := startSamplers(st.Clock == scenario.ClockVirtual)
	var m check.Metrics
	var conns topology.Result
	var err error
	var model time.Duration // how long a virtual run took in simulated time; -1: a real run that started
	if ex != nil {
		ex.ID, err = execclient.Identify(ctx, ex.Config)
		rec.Client = ex.RuntimeRecord()
	}
	if c.Refused != "" && err == nil {
		err = errors.New(c.Refused)
	} else if err == nil {
		if c.Virtual() {
			m, conns, model, err = driveVirtual(ctx, w, c, opt, log, tm)
		} else {
			m, conns, err = topology.Drive(ctx, &topology.Run{Run: c, W: w, Options: opt.topology(nil),
				Exec: ex, Log: log, Timers: tm, Probe: metrics.StartProcProbe(metrics.DefaultProbeInterval)})
			model = -1 // wall_ms over the time scale, below
		}
		rec.Closes, rec.Server, rec.Hops, rec.Replay = conns.Closes, conns.Server, conns.Hops, conns.Replay
		rec.Notes = append(rec.Notes, conns.Notes...)
		if ex != nil {
			rec.Client = ex.RuntimeRecord()
			ex.ProgramLag(tm)
		}
	}
	notRun := notRunReason(err)
	beside := mark.beside()
	rec.WallMs = float64(time.Since(start)) / float64(time.Millisecond)
	rec.ModelMs = modelMs(model, rec.WallMs, st.TimeScale)
	rec.Metrics = m
	virtual := c.Virtual()
	if virtual {
		// virtual: not judged. Its time is simulated, so nothing the machine did moved
		// it: no timer lateness, no CPU rule, no baseline excuse (machineShift in engine/report/baseline).
		rec.Timing = machineTook(&report.Timing{Sources: map[string]report.TimingSource{}}, pressure, cpuWait, queue, beside)
	} else {
		sched.Into(&tm.Sched)
		tol := jg.After(st, m)
		rec.Timing = machineTook(runTiming(tm, jg, tol, st), pressure, cpuWait, queue, beside)
		realTimers(rec, st, tol, opt)
	}
	keepSlack(rec, c, tm, opt)
	settle(rec, sc, r, opt, notRun, err, ctx.Err() != nil, conns.Written)
	if rec.Status == report.StatusPass || rec.Status == report.StatusFail {
		expectChecks(rec, r, m)
		rec.Predicted = predict.Record(c.Oracle, st.TimeScale, rec.Timing, m)
		oracleChecks(rec, sc, r)
		if why := judge.ExpectCPUFlip(r.Expect, rec); why != "" && opt.LagTolerance >= 0 && !virtual { // a negative tolerance judges nothing
			rec.Timing.Noisy, rec.Timing.Reason = true, why
			notAResult(rec)
		}
	}
	againstBaseline(rec, opt)
	rec.Notes = append(rec.Notes, versionNotes(rec)...)
	logEnd(log, rec, m)
	if opt.Observer != nil {
		opt.Observer.RunEnded(r, rec)
	}
	return rec
}
