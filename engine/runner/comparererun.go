package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/admit"
	"github.com/kalab-dev/kalab/engine/check"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// A compare check reads runs that each held their own timing, and is then evaluated over
// what the link's lateness and the other processes' CPU could have added to the latencies
// it reads (compareFlip). When that range holds both verdicts, the runs it reads are run
// once more, each alone, as a noisy run's next attempt is (attempts): after the runs of the
// scenario have ended, with the process to itself and once probe timers find the headroom
// the run's tolerance needs. Then the check is evaluated again, and left not evaluated if
// it still cannot be judged. So a scenario whose compare reads a latency keeps its runs'
// records until its compare is settled: results.jsonl never holds a record a rerun replaced.

// holdsRuns reports whether a scenario's runs wait for its compare checks before they are
// written: it has a compare check on a latency or a real timer's metric, which its runs'
// timing can leave unjudged.
func holdsRuns(sc *scenario.Scenario) bool {
	for _, a := range sc.Compare {
		if slices.ContainsFunc(a.Refs(), func(ref check.Ref) bool { return rerunRef(sc, ref) }) {
			return true
		}
	}
	return false
}

// rerunRef reports whether the machine can leave a compare operand without a verdict, so
// that its run is rerun alone: a latency, a total time or a rate, or a metric a real timer produced on the real
// clock (judge.ReadsRealTimer: a real server's own idle close, a paced accept loop's
// counts).
func rerunRef(sc *scenario.Scenario, ref check.Ref) bool {
	if strings.HasPrefix(ref.Metric, "latency_ms.") || ref.Metric == "total_ms" || ref.Metric == "rps" {
		return true // a time the link's lateness and other processes' CPU can move
	}
	for _, r := range sc.Runs {
		if r.Variant == ref.Variant {
			return judge.ReadsRealTimer(ref.Metric, r.Settings)
		}
	}
	return false
}

// compareReruns lists the runs to rerun alone: those whose latencies or real timers'
// metrics (rerunRef) a compare check reads when the machine's timing left that check
// without a verdict (judge.Unjudged), each once, in variant order. None when reruns are off (--attempts 1) or
// timing is not judged (--lag-tolerance below 0).
func compareReruns(sc *scenario.Scenario, srec *report.Scenario, jobs map[string]job, opt Options) []job {
	if opt.Attempts < 2 || opt.LagTolerance < 0 || len(srec.Checks) != len(sc.Compare) {
		return nil
	}
	var variants []string
	for i, c := range srec.Checks {
		if !judge.Unjudged(c.NotEvaluated) {
			continue
		}
		for _, ref := range sc.Compare[i].Refs() {
			if rerunRef(sc, ref) && !slices.Contains(variants, ref.Variant) {
				variants = append(variants, ref.Variant)
			}
		}
	}
	slices.Sort(variants)
	var out []job
	for _, v := range variants {
		if j, ok := jobs[v]; ok {
			out = append(out, j)
		}
	}
	return out
}

// rerunForCompare runs k once more, alone, for a compare check that reads it (compareReruns),
// and returns the record that stands: the rerun's, or prior's when there was no headroom for
// it (then nothing of prior's was touched). A rerun that did not hold its own timing stands
// too, as an error without a verdict: its files replaced prior's.
func rerunForCompare(ctx context.Context, w *report.Writer, k job, prior *report.Run, opt Options, conns *admit.Budget, adm *admit.Admission) *report.Run {
	if ctx.Err() != nil || prior == nil || prior.Timing == nil {
		return prior
	}
	jg, tol := judgeOf(k, opt)
	held := conns.AcquireAll(ctx)
	if held == 0 {
		return prior
	}
	defer conns.Release(held)
	waited := time.Now()
	probe, ok := headroom(ctx, tol, opt.HeadroomWait)
	attempt := max(prior.Timing.Attempt, 1) + 1
	reruns := append(slices.Clone(prior.Timing.Reruns), fmt.Sprintf("attempt %d: rerun alone for a compare check the machine's timing left without a verdict; %s after %.1f s",
		attempt, probe, time.Since(waited).Seconds()))
	if !ok {
		prior.Timing.Reruns = append(reruns, "no headroom for it: the earlier attempt stands")
		return prior
	}
	if err := w.Rerun(k.sc.Name, k.run.Variant); err != nil {
		prior.Timing.Reruns = append(reruns, "not rerun: "+err.Error())
		return prior
	}
	opt.Log.Warn().Str("scenario", k.sc.Name).Str("variant", k.run.Variant).Str("headroom", probe).
		Msg("a compare check could not be judged; rerunning the run alone")
	tm := opt.timers()
	adm.Add(tm, tol)
	rec := execute(ctx, w, k.c, opt, tm, jg)
	adm.Remove(tm)
	if rec.Timing == nil {
		return rec
	}
	rec.Timing.Attempt, rec.Timing.Reruns = attempt, reruns
	if rec.Timing.Noisy {
		rec.Error = fmt.Sprintf("the machine could not hold this run's timing when it was rerun alone for a compare check (%s); "+
			"no verdict was given. Run it with a larger --time-scale, fewer runs at once (--parallel 1), or on a less busy machine", rec.Timing.Reason)
	}
	return rec
}
