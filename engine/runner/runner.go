// Package runner executes a Plan: each run gets its own server, latency proxy and client on
// fresh loopback ports, is driven by its load schedule, and ends as one result record with
// its checks evaluated; compare checks run when a scenario's last run ends.
//
// The runner composes rooms of their own: the topology builds and drives one run
// (engine/topology), the judge decides whether its timing holds (engine/judge), admission
// and the descriptor budget say when it may start (engine/admit).
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/admit"
	"github.com/kalab-dev/kalab/engine/topology"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// ErrNoRuns means the filter left nothing to run.
var ErrNoRuns = errors.New("no run matches the filter")

// Options control an invocation.
type Options struct {
	Out          string         // results directory (results/)
	RunID        string         // empty: a new one
	Parallel     int            // runs at once; <= 0 means DefaultParallel
	TimeScale    float64        // > 0 overrides every file's time_scale
	Seed         *int64         // overrides every run's load.seed
	Filter       *regexp.Regexp // keeps runs whose "scenario/variant" matches
	KalabVersion string
	Log          zerolog.Logger
	Observer     Observer // live progress; nil for none
	// Baseline, when set, compares each run with its baseline run (kalab run --baseline).
	Baseline     Baseline
	SkipRequests bool // do not write per-request (and per-connection) files
	AllowRemote  bool // a server.url may name a host outside loopback
	// LagTolerance multiplies the timing tolerance each run derives from its checks; 0
	// means 1, and a negative value judges nothing: lateness is recorded, no run is noisy.
	LagTolerance float64
	// Attempts bounds how often a noisy run is tried; <= 0 means DefaultAttempts.
	Attempts int
	// HeadroomWait bounds how long a rerun waits for the machine's headroom before it
	// gives up; <= 0 means DefaultHeadroomWait.
	HeadroomWait time.Duration
	// RequireClients makes a run whose real client is not installed an error instead of
	// not run (kalab run --require-clients, for CI machines that must have them).
	RequireClients bool
	// NewClient, when set, builds every run's client instead of the file's client section
	// (kalabtest's go-func: the caller's own Go client). On the virtual clock it is handed
	// the in-memory network in client.Config.Dial and must dial only through it; with
	// CallerRealClock, or without a Host, its runs go on the real clock at time scale 1.
	NewClient func(client.Config) (client.Client, error)
	// CallerRealClock keeps the runs of the caller's own client (NewClient) on the real
	// clock, over loopback sockets (kalabtest.RealClock).
	CallerRealClock bool
	DeadlineScale   float64 // multiplies each run's deadline (tests use < 1); 0 means 1
	// Shard is "i/n" when the plan is one part of a split (kalab run --shard), for the
	// invocation record; PlanHash is then the whole plan's (PlanHash of the plan before it
	// was split), so that the shards' records share it.
	Shard, PlanHash string
	// Created, when set, is called with the run directory once results.jsonl holds the
	// opening invocation record and before any run starts (kalab run --shard writes its
	// manifest there, so that a shard that crashes is still recognised); an error stops
	// the invocation.
	Created func(dir string) error

	// Clock, when set (scenario.ClockVirtual or ClockReal), overrides every run's clock
	// where the run can follow it (kalab run --clock).
	Clock string
	// Host runs the runs on the virtual clock (vclock.Main in the kalab binary,
	// vclock.FromTest in a test); nil puts every run on the real clock, and a file that
	// asks for the virtual one is refused.
	Host *Host
	// Reuse, when set, gives the runs of real programs it holds instead of running them
	// again (kalab run --reuse-real).
	Reuse *Reuse

	middleboxes []func() topology.Hop // hops added between the link and the server (tests)
	newTimers   func() *judge.Timers  // makes each attempt's timers; nil: empty ones (tests inject lateness)
}

// timers makes one attempt's lateness recorders.
func (o Options) timers() *judge.Timers {
	if o.newTimers != nil {
		return o.newTimers()
	}
	return &judge.Timers{}
}

// topology is what a run's topology takes of the options, over n on the virtual clock
// (nil on the real one).
func (o Options) topology(n *vnet.Network) topology.Options {
	return topology.Options{KalabVersion: o.KalabVersion, AllowRemote: o.AllowRemote, SkipRequests: o.SkipRequests,
		DeadlineScale: o.DeadlineScale, Observer: o.Observer, NewClient: o.NewClient, Middleboxes: o.middleboxes, Network: n}
}

// Compile is what of the options changes how each run goes: the compile step's options.
func (o Options) Compile() compile.Options {
	return compile.Options{TimeScale: o.TimeScale, Seed: o.Seed, Clock: o.Clock, Virtual: o.Host.Available(),
		CallerClient: o.NewClient != nil, CallerRealClock: o.CallerRealClock, TestHops: len(o.middleboxes) > 0}
}

// Baseline is the baseline comparison a run is judged by (a *baseline.Comparer).
type Baseline interface {
	// Apply sees a run's record after its checks and before it is written, and may add
	// checks or find the run noisy.
	Apply(rec *report.Run)
	// Gates returns the metrics the comparison will gate for a run, each with its slack
	// (how far it may move from the baseline value, in its own unit; for rps, the
	// equivalent slack of total_ms), at the run's time scale: timing tolerances are
	// derived from them as from the run's own checks.
	Gates(scenario, variant string, scale float64) map[string]float64
}

// exclusiveConns is the connection count from which a run has the process to itself.
const exclusiveConns = 1000

// DefaultParallel is how many runs overlap by default (see the README's performance
// section for the measurement behind it).
const DefaultParallel = 8

// Observer is told about runs as they progress; the CLI draws progress bars with it.
type Observer interface {
	RunStarted(r *scenario.Run, total int)
	RequestDone(r *scenario.Run, ok bool)
	RunEnded(r *scenario.Run, rec *report.Run)
}

// Outcome is what an invocation produced.
type Outcome struct {
	Dir         string // results/<run-id>
	Runs        []*report.Run
	Scenarios   []*report.Scenario
	Interrupted bool
	// Invocation is the closing invocation record written at the end of results.jsonl.
	Invocation *report.Invocation
}

// Failed reports whether any check failed or any run ended in error or was interrupted.
// A run not run (a program it needs is missing) and a check not evaluated are not
// failures, nor passes: NotRun lists them (report.Verdicts).
func (o *Outcome) Failed() bool {
	for _, r := range o.Runs {
		if r.Status != report.StatusPass && r.Status != report.StatusNotRun {
			return true
		}
	}
	for _, s := range o.Scenarios {
		if s.Status != report.StatusPass && s.Status != report.StatusNotEvaluated {
			return true
		}
	}
	return false
}

// Unjudged lists the compare checks left without a verdict because the machine's measured
// timing could have changed it (compareFlip): no run failed, yet the run has no verdict on
// them, so it cannot exit 0 (a check not evaluated is never a pass).
func (o *Outcome) Unjudged() []report.Check {
	var out []report.Check
	for _, s := range o.Scenarios {
		for _, c := range s.Checks {
			if judge.Unjudged(c.NotEvaluated) {
				out = append(out, c)
			}
		}
	}
	return out
}

// NotRun lists the runs that could not run here because a program they need is not
// installed.
func (o *Outcome) NotRun() []*report.Run {
	var out []*report.Run
	for _, r := range o.Runs {
		if r.Status == report.StatusNotRun {
			out = append(out, r)
		}
	}
	return out
}

// notRunReason is why a run could not run here, when err says a program it needs (its
// real client, its real server, the user's command) is not installed; "" otherwise.
func notRunReason(err error) string {
	if errors.Is(err, execclient.ErrMissing) || errors.Is(err, realserver.ErrMissing) {
		return err.Error()
	}
	return ""
}

// markNotRun records a run that could not run here: no verdict, and each of its expect
// checks not evaluated, with the reason.
func markNotRun(rec *report.Run, reason string, expect []scenario.Assertion) {
	rec.Status, rec.Reason = report.StatusNotRun, reason
	for _, a := range expect {
		rec.Checks = append(rec.Checks, report.Check{Kind: "expect", Expr: a.Source, Observed: map[string]float64{},
			NotEvaluated: "the run did not run: " + reason, File: a.File, Line: a.Line, Col: a.Col})
	}
}

// CheckFailed reports whether a check gave the verdict "fail": a run's expect check or
// baseline gate, or a compare check. Unlike Failed, a run without a verdict is not one.
func (o *Outcome) CheckFailed() bool {
	for _, r := range o.Runs {
		if r.Status == report.StatusFail {
			return true
		}
	}
	for _, s := range o.Scenarios {
		if s.Status == report.StatusFail {
			return true
		}
	}
	return false
}

// Errored reports whether a run could not complete (status error).
func (o *Outcome) Errored() bool {
	for _, r := range o.Runs {
		if r.Status == report.StatusError {
			return true
		}
	}
	return false
}

type job struct {
	c      *compile.Run
	sc     *scenario.Scenario // the plan's scenario of the run (a shard's holds only its part's runs)
	run    *scenario.Run      // c.Source
	idx    int
	weight int           // descriptors it may hold open at once (runHold)
	alone  bool          // a burst of exclusiveConns connections: the run has the process to itself
	done   chan struct{} // closed when the run's record is taken, for a run alone (feed)
	tooBig string        // why the run cannot get its descriptors; empty when it can
}

// Execute compiles the plan's runs (engine/compile) and runs them. It returns an error only
// when results cannot be written; a run that fails is a record with status error. When ctx
// is cancelled, runs in flight end as interrupted, runs not started are skipped, and
// Outcome.Interrupted is set.
func Execute(ctx context.Context, plan *scenario.Plan, opt Options) (*Outcome, error) {
	return ExecuteCompiled(ctx, plan, nil, opt)
}

// ExecuteCompiled is Execute over runs the caller compiled (compile.Plan of plan, or of the
// plan plan was cut from, under opt.Compile()); a run of plan that runs lacks is compiled
// here.
func ExecuteCompiled(ctx context.Context, plan *scenario.Plan, runs []*compile.Run, opt Options) (*Outcome, error) {
	if opt.Attempts <= 0 {
		opt.Attempts = DefaultAttempts
	}
	if opt.HeadroomWait <= 0 {
		opt.HeadroomWait = DefaultHeadroomWait
	}
	if opt.Parallel <= 0 {
		opt.Parallel = DefaultParallel
	}
	if opt.RunID == "" {
		opt.RunID = report.NewRunID(time.Now())
	}
	jobs, remaining, conns, err := planJobs(plan, runs, opt)
	if err != nil {
		return nil, err
	}
	adm := admit.NewAdmission()
	w, err := report.Create(opt.Out, opt.RunID)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := w.Close(); err != nil {
			opt.Log.Warn().Err(err).Str("file", w.Path).Msg("closing the results file")
		}
	}()
	inv, err := openInvocation(w, plan, opt, len(jobs))
	if err != nil {
		return nil, err
	}
	// The first write error stops the plan: runs in flight end, none starts, and the file
	// keeps the whole lines written before it.
	parent := ctx
	ctx, stopPlan := context.WithCancelCause(ctx)
	defer stopPlan(nil)

	out := &Outcome{Dir: w.Dir}
	col := &collector{w: w, opt: opt, out: out, recs: make([]*report.Run, len(jobs)), remaining: remaining,
		byScenario: map[*scenario.Scenario]map[string]*report.Run{}, stop: stopPlan, jobs: map[*scenario.Scenario]map[string]job{}}
	prebuild(ctx, jobs, opt)
	queue := make(chan job)
	var wg sync.WaitGroup
	for i := 0; i < min(opt.Parallel, len(jobs)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if ctx.Err() != nil && parent.Err() == nil {
					continue // the plan stopped at a write error: no record can be written
				}
				if again := col.take(j, attempts(ctx, w, j, opt, conns, adm)); len(again) > 0 {
					// A compare the machine's timing left without a verdict: its runs
					// once more, each alone, then the scenario is settled either way.
					for _, k := range again {
						col.replace(k, rerunForCompare(ctx, w, k, col.prior(k), opt, conns, adm))
					}
					col.settle(j.sc)
				}
				if j.done != nil {
					close(j.done)
				}
			}
		}()
	}
	feed(ctx, queue, startOrder(jobs, opt), virtualAtOnce(opt.Parallel))
	wg.Wait()
	for _, r := range col.recs {
		if r != nil {
			out.Runs = append(out.Runs, r)
		}
	}
	inPlanOrder(out.Scenarios, plan)
	out.Interrupted = parent.Err() != nil
	return out, finishInvocation(w, inv, out, col.writeErr)
}

// collector takes each run's record as it ends: writes it, and compares a scenario's
// runs when its last one ends. The runs of a scenario with a compare check on a latency are
// written with its compare record instead, as one of them may still be rerun
// (compareReruns). The first write error stops the plan.
type collector struct {
	mu         sync.Mutex
	w          *report.Writer
	opt        Options
	out        *Outcome
	recs       []*report.Run
	byScenario map[*scenario.Scenario]map[string]*report.Run
	jobs       map[*scenario.Scenario]map[string]job
	held       map[*scenario.Scenario][]*report.Run // runs not yet written, in the order they ended
	remaining  map[*scenario.Scenario]int
	writeErr   error
	stop       func(error)
}

func (c *collector) failed(err error) {
	if err != nil && c.writeErr == nil {
		c.writeErr = err
		c.opt.Log.Error().Err(err).Msg("stopping the plan: results cannot be written")
		c.stop(err)
	}
}

// take records a run's end. When it is its scenario's last, the compare checks are
// evaluated; it returns the runs to rerun alone when the machine's timing left one without
// a verdict (compareReruns), and the caller then replaces them and settles the scenario.
func (c *collector) take(j job, rec *report.Run) []job {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs[j.idx] = rec
	if c.byScenario[j.sc] == nil {
		c.byScenario[j.sc] = map[string]*report.Run{}
		c.jobs[j.sc] = map[string]job{}
	}
	c.byScenario[j.sc][j.run.Variant], c.jobs[j.sc][j.run.Variant] = rec, j
	if holdsRuns(j.sc) {
		if c.held == nil {
			c.held = map[*scenario.Scenario][]*report.Run{}
		}
		c.held[j.sc] = append(c.held[j.sc], rec)
	} else {
		c.failed(c.w.WriteRun(rec))
	}
	c.remaining[j.sc]--
	if c.remaining[j.sc] > 0 {
		return nil
	}
	srec := compare(j.sc, c.byScenario[j.sc], c.opt)
	if again := compareReruns(j.sc, srec, c.jobs[j.sc], c.opt); len(again) > 0 {
		return again
	}
	c.write(j.sc, srec)
	return nil
}

// prior is the record a rerun of k replaces.
func (c *collector) prior(k job) *report.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byScenario[k.sc][k.run.Variant]
}

// replace puts a rerun's record in the place of the run's earlier one.
func (c *collector) replace(k job, rec *report.Run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.byScenario[k.sc][k.run.Variant]
	c.recs[k.idx], c.byScenario[k.sc][k.run.Variant] = rec, rec
	for i, r := range c.held[k.sc] {
		if r == old {
			c.held[k.sc][i] = rec
		}
	}
}

// settle evaluates a scenario's compare checks once more, after its reruns, and writes it.
func (c *collector) settle(sc *scenario.Scenario) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.write(sc, compare(sc, c.byScenario[sc], c.opt))
}

// write writes a scenario's held runs and its compare record.
func (c *collector) write(sc *scenario.Scenario, srec *report.Scenario) {
	for _, r := range c.held[sc] {
		c.failed(c.w.WriteRun(r))
	}
	delete(c.held, sc)
	c.out.Scenarios = append(c.out.Scenarios, srec)
	c.failed(c.w.WriteScenario(srec))
}

// compileRun is the compile step of one run: compile.One, which a test counts.
var compileRun = compile.One

// planJobs lists the plan's runs the filter keeps, each compiled once (its compiled run
// from compiled, or compiled here) and weighed in descriptors against the invocation's
// budget, and counts each scenario's runs.
func planJobs(plan *scenario.Plan, compiled []*compile.Run, opt Options) ([]job, map[*scenario.Scenario]int, *admit.Budget, error) {
	var jobs []job
	var holds []admit.Hold
	remaining := map[*scenario.Scenario]int{}
	copt, of := opt.Compile(), make(map[*scenario.Run]*compile.Run, len(compiled))
	for _, c := range compiled {
		of[c.Source] = c
	}
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			if opt.Filter != nil && !opt.Filter.MatchString(sc.Name+"/"+r.Variant) {
				continue
			}
			h := admit.HoldOf(r.Settings)
			w := h.FDs
			if h.Conns >= exclusiveConns {
				w = -1 // the whole budget, below
			}
			c := of[r]
			if c == nil {
				c = compileRun(sc, r, copt)
			}
			if c.Virtual() {
				// An in-memory network holds no descriptor, and no neighbour's timers can
				// make a virtual run late.
				h, w = admit.Hold{}, 0
			}
			jobs = append(jobs, job{c: c, sc: sc, run: r, idx: len(jobs), weight: w, alone: w < 0})
			holds = append(holds, h)
			remaining[sc]++
		}
	}
	if len(jobs) == 0 {
		return nil, nil, nil, ErrNoRuns
	}
	total, tooBig, err := admit.FileBudget(holds, opt.Parallel)
	if err != nil {
		return nil, nil, nil, err
	}
	for i := range jobs {
		jobs[i].tooBig = tooBig(holds[i])
	}
	// A burst of thousands of connections keeps both cores busy for a second or two, long
	// enough to delay a neighbour's timers by tens of milliseconds: such runs run alone.
	for i := range jobs {
		if jobs[i].weight < 0 {
			jobs[i].weight = total
		}
	}
	return jobs, remaining, admit.NewBudget(total), nil
}

// openInvocation writes the invocation's opening record and tells the caller where the
// run directory is.
func openInvocation(w *report.Writer, plan *scenario.Plan, opt Options, planned int) (*report.Invocation, error) {
	inv := &report.Invocation{KalabVersion: opt.KalabVersion, RunID: opt.RunID, State: report.InvocationStarted,
		PlanHash: opt.PlanHash, Shard: opt.Shard, Planned: planned, StartedAt: time.Now().UTC()}
	if inv.PlanHash == "" {
		inv.PlanHash = PlanHash(plan, opt)
	}
	if opt.Filter != nil {
		inv.Filter = opt.Filter.String()
	}
	if err := w.WriteInvocation(inv); err != nil {
		return nil, err
	}
	if opt.Created != nil {
		if err := opt.Created(w.Dir); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

// finishInvocation tallies the runs into the invocation's closing record and writes it;
// the error is the first write error.
func finishInvocation(w *report.Writer, inv *report.Invocation, out *Outcome, writeErr error) error {
	end := time.Now().UTC()
	inv.State, inv.EndedAt = report.InvocationEnded, &end
	runs := make([]report.Run, len(out.Runs))
	for i, r := range out.Runs {
		runs[i] = *r
	}
	inv.Tally(runs)
	inv.Completed = !out.Interrupted && writeErr == nil && inv.Recorded == inv.Planned && inv.Interrupted == 0
	switch {
	case writeErr != nil:
		inv.Reason = "stopped at a write error: " + writeErr.Error()
	case out.Interrupted:
		inv.Reason = "interrupted"
	}
	ferr := w.Finish(inv)
	out.Invocation = inv
	if writeErr == nil && ferr != nil {
		writeErr = ferr
	}
	return writeErr
}

// DefaultAttempts bounds how often a noisy run is tried: once among the others, once
// beside the other reruns, then alone (each rerun waits for the first attempts to end, so
// CI time stays bounded).
const DefaultAttempts = 3

// DefaultHeadroomWait is how long a rerun waits for the machine to have headroom.
const DefaultHeadroomWait = 30 * time.Second

// headroom is waitHeadroom; tests of the attempts that stand in for the judge replace it.
var headroom = admit.WaitHeadroom

// beforeStart is the record of a run that does not start: one that cannot get its
// descriptors (an error), or one --reuse-real takes from an earlier file; nil otherwise.
func beforeStart(j job, opt Options) *report.Run {
	if j.tooBig != "" {
		rec := notStarted(j.sc, j.run, opt)
		rec.Status, rec.Error = report.StatusError, j.tooBig
		return rec
	}
	return opt.Reuse.take(j, opt)
}

// rerunHold takes the budget for attempt (2 or later): the second runs once no first
// attempt is in flight, beside the other reruns only; a later one alone (rerunsBeside).
func rerunHold(ctx context.Context, conns *admit.Budget, j job, attempt int) int {
	if attempt == rerunsBeside {
		return conns.AcquireRerun(ctx, j.weight)
	}
	return conns.AcquireAll(ctx)
}

// rerunsBeside is the attempt that runs beside the other reruns: the first rerun of a run.
const rerunsBeside = 2

// rerunWhere says where an attempt runs, for the log and the record.
func rerunWhere(attempt int) string {
	if attempt == rerunsBeside {
		return "beside the other reruns"
	}
	return "alone"
}

// attempts runs a job until it is not noisy or opt.Attempts is reached. The first attempt
// is admitted by measured headroom among the runs in flight. The second waits until no
// first attempt is in flight and runs beside the other reruns only, admitted by their
// measured headroom as first attempts are; a third or later waits until it has the process
// to itself. Each rerun then waits until probe timers on the machine keep inside the run's
// tolerance (waitHeadroom), for up to opt.HeadroomWait. A run still noisy, or given no
// headroom, ends as an engine error: the machine could not hold its timing, and no verdict
// is given.
func attempts(ctx context.Context, w *report.Writer, j job, opt Options, conns *admit.Budget, adm *admit.Admission) *report.Run {
	if rec := beforeStart(j, opt); rec != nil {
		return rec
	}
	jg, tol := judgeOf(j, opt)
	if j.c.Virtual() {
		// Simulated time: no descriptors to hold, no headroom to wait for, and nothing the
		// machine does can make the run noisy, so it runs once.
		rec := execute(ctx, w, j.c, opt, opt.timers(), jg)
		if rec.Timing != nil {
			rec.Timing.Attempt = 1
		}
		return rec
	}
	attempts := max(opt.Attempts, 1)
	var reruns []string
	held := 0
	for attempt := 1; ; attempt++ {
		tm := opt.timers()
		switch {
		case attempt == 1:
			held = conns.Acquire(ctx, j.weight)
			fallthrough
		case attempt == rerunsBeside:
			if held > 0 {
				if ok, _ := adm.Admit(ctx, tm, tol); !ok {
					conns.Release(held)
					held = 0
				}
			}
		case held > 0:
			adm.Add(tm, tol)
		}
		if held == 0 {
			return notStarted(j.sc, j.run, opt)
		}
		rec := execute(ctx, w, j.c, opt, tm, jg)
		adm.Remove(tm)
		conns.Release(held)
		held = 0
		if rec.Timing == nil {
			return rec
		}
		rec.Timing.Attempt, rec.Timing.Reruns = attempt, reruns
		if !rec.Timing.Noisy || ctx.Err() != nil {
			return rec
		}
		reruns = append(reruns, fmt.Sprintf("attempt %d: %s", attempt, rec.Timing.Reason))
		rec.Timing.Reruns = reruns
		if attempt >= attempts {
			rec.Error = fmt.Sprintf("the machine could not hold this run's timing: %d attempts were noisy (%s); "+
				"no verdict was given. Run it with a larger --time-scale, fewer runs at once (--parallel 1), or on a less busy machine",
				attempt, triedWhere(attempt, rec.Timing.Reason))
			return rec
		}
		if held = rerunHold(ctx, conns, j, attempt+1); held == 0 {
			return rec
		}
		waited := time.Now()
		probe, ok := headroom(ctx, tol, opt.HeadroomWait)
		reruns = append(reruns, fmt.Sprintf("attempt %d, %s: %s after %.1f s", attempt+1, rerunWhere(attempt+1), probe, time.Since(waited).Seconds()))
		rec.Timing.Reruns = reruns
		if !ok {
			conns.Release(held)
			rec.Error = fmt.Sprintf("the machine could not hold this run's timing: %d attempt%s noisy (%s), and no headroom for another within %v (%s); "+
				"no verdict was given. Run it with a larger --time-scale, fewer runs at once (--parallel 1), or on a less busy machine",
				attempt, map[bool]string{true: " was", false: "s were"}[attempt == 1], rec.Timing.Reason, opt.HeadroomWait, probe)
			return rec
		}
		opt.Log.Warn().Str("scenario", j.sc.Name).Str("variant", j.run.Variant).Int("attempt", attempt).
			Str("reason", rec.Timing.Reason).Str("headroom", probe).Msg("run was noisy; rerunning it " + rerunWhere(attempt+1))
		if err := w.Rerun(j.sc.Name, j.run.Variant); err != nil {
			conns.Release(held)
			rec.Error += "; " + err.Error()
			return rec
		}
	}
}

// triedWhere says where a run's noisy attempts ran, and the last one's reason.
func triedWhere(attempt int, reason string) string {
	switch attempt {
	case 1:
		return "among the other runs; " + reason
	case rerunsBeside:
		return "among the other runs, then beside the other reruns; " + reason
	}
	return fmt.Sprintf("among the other runs, beside the other reruns, then %d alone; %s", attempt-rerunsBeside, reason)
}

// judgeOf returns a run's timing judge and the tolerance its plan gives: before the run its
// tolerance is what the plan says (admission watches it); after it, each expect check's own
// margin replaces the plan's guess (judge.after).
func judgeOf(j job, opt Options) (*judge.Judge, judge.Tolerance) {
	st := j.c.Settings
	var gated map[string]float64
	if opt.Baseline != nil {
		gated = opt.Baseline.Gates(j.sc.Name, j.run.Variant, st.TimeScale)
	}
	jg := judge.New(judge.Reads(j.sc, j.run, gated), opt.LagTolerance)
	return jg, jg.Before(st)
}

// PlanHash identifies a plan: sha256 over every scenario, variant and resolved settings,
// with the time scale and seed overrides applied, before any filter. Shards of one plan
// share it.
func PlanHash(plan *scenario.Plan, opt Options) string {
	h := sha256.New()
	for _, sc := range plan.Scenarios {
		fmt.Fprintf(h, "scenario %q\n", sc.Name)
		for _, r := range sc.Runs {
			st := r.Settings
			if opt.TimeScale > 0 {
				st.TimeScale = opt.TimeScale
			}
			if opt.Seed != nil {
				st.Load.Seed = *opt.Seed
			}
			fmt.Fprintf(h, "run %q %s\n", r.Variant, paramsJSON(st))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// compare evaluates a scenario's compare checks over the runs that ran.
func compare(sc *scenario.Scenario, runs map[string]*report.Run, opt Options) *report.Scenario {
	rec := &report.Scenario{KalabVersion: opt.KalabVersion, RunID: opt.RunID, Scenario: sc.Name, File: sc.File,
		Runs: len(runs), Status: report.StatusPass, Checks: []report.Check{}}
	lookup := func(name string) (check.Metrics, bool) {
		r, ok := runs[name]
		if !ok {
			return check.Metrics{}, false
		}
		return r.Metrics, true
	}
	for _, r := range runs {
		if r.Status == report.StatusInterrupted {
			rec.Status = report.StatusInterrupted
		}
	}
	var why []string
	reach := reacher(sc, runs, func(s string) { why = append(why, s) })
	for _, a := range sc.Compare {
		c := report.Check{Kind: "compare", Expr: a.Source, File: a.File, Line: a.Line, Col: a.Col}
		missing := ""
		for _, ref := range a.Variants {
			if r, ok := runs[ref.Name]; !ok {
				missing = fmt.Sprintf("variant %s did not run here (filtered out, or in another shard)", ref.Name)
			} else if r.Status == report.StatusNotRun {
				missing = fmt.Sprintf("variant %s did not run: %s", ref.Name, r.Reason)
			} else if r.Status == report.StatusError || r.Status == report.StatusInterrupted {
				missing = fmt.Sprintf("variant %s did not complete (%s)", ref.Name, r.Status)
			}
		}
		if missing != "" {
			c.NotEvaluated, c.Observed = missing, map[string]float64{}
			rec.Checks = append(rec.Checks, c)
			continue
		}
		why = why[:0]
		res := a.CheckCompare(lookup, reach)
		c.Pass, c.Observed = res.Pass, res.Observed
		if !res.Pass {
			c.Why = joinWhy(why)
		}
		if why := reachUnjudged(res.Err); why != "" {
			c.NotEvaluated = why
		} else if res.Err != nil {
			c.Error = res.Err.Error()
		} else if why := judge.CompareFlip(a, runs, res.Pass); why != "" {
			c.Pass, c.NotEvaluated = false, why
		}
		rec.Checks = append(rec.Checks, c)
	}
	if rec.Status != report.StatusInterrupted {
		rec.Status = report.ScenarioStatus(rec.Checks)
	}
	return rec
}

// notStarted records a run that was interrupted while waiting for its turn.
func notStarted(sc *scenario.Scenario, r *scenario.Run, opt Options) *report.Run {
	return &report.Run{KalabVersion: opt.KalabVersion, RunID: opt.RunID, Scenario: sc.Name, File: sc.File,
		Variant: r.Variant, Matrix: r.Matrix, Params: paramsJSON(r.Settings), TimeScale: r.Settings.TimeScale,
		Seed: r.Settings.Load.Seed, StartedAt: time.Now().UTC(), Status: report.StatusInterrupted,
		Error: "interrupted before the run started", Checks: []report.Check{}}
}

func paramsJSON(st scenario.Settings) json.RawMessage {
	b, err := json.Marshal(st)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// CompareScenario evaluates a scenario's compare checks over runs, keyed by variant, as
// Execute does when the scenario's last run ends; kalab merge uses it for the runs of
// shards. A variant missing from runs makes the checks that read it not evaluated.
func CompareScenario(sc *scenario.Scenario, runs map[string]*report.Run, kalabVersion, runID string) *report.Scenario {
	return compare(sc, runs, Options{KalabVersion: kalabVersion, RunID: runID})
}
