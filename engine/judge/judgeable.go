package judge

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// quietLateness is the lateness a statistic of a timer source reaches on a quiet machine:
// the 90th percentile, over the runs of results/baseline.jsonl (this project's machine, load
// average under 1), of that source's statistic, rounded up: link p99 1.36 ms and max 4.11 ms
// (74 runs), schedule p99 0.57 ms (40), idle_close p99 0.22 ms (24). A limit below it makes
// its run noisy in more than one run in ten with nothing else running, and in nearly every
// run beside other work: a check that sets it gets no verdict. p50 and mean limits are never
// below tolFloor, which is above their quiet lateness (link 0.03 and 0.16 ms); the sched
// source is not in the baseline, so its limits are not compared.
var quietLateness = map[string]time.Duration{
	SrcLink + "." + StatP99:      1500 * time.Microsecond,
	SrcLink + "." + StatMax:      5 * time.Millisecond,
	SrcSchedule + "." + StatP99:  600 * time.Microsecond,
	SrcIdleClose + "." + StatP99: 250 * time.Microsecond,
}

// maxTimeScale is the largest time_scale the schema accepts.
const maxTimeScale = 100

// Unjudgeable reports, as warnings with the check's file:line:col, every check whose timing
// tolerance, derived from the plan before anything runs, is below the lateness its statistic
// reaches on a quiet machine (quietLateness): its runs would be noisy, rerun, and end without
// a verdict. Each says what time scale, or which statistic, would make it judgeable.
// timeScale overrides the files' own (0 keeps them); lagTolerance is --lag-tolerance as
// the runner takes it (0 means 1, negative judges nothing, so nothing is reported).
func Unjudgeable(plan *scenario.Plan, timeScale, lagTolerance float64) scenario.Diagnostics {
	if lagTolerance < 0 {
		return nil
	}
	factor := lagTolerance
	if factor == 0 {
		factor = 1
	}
	var out scenario.Diagnostics
	seen := map[string]bool{}
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			st := r.Settings
			if timeScale > 0 {
				st.TimeScale = timeScale
			}
			for _, x := range Reads(sc, r, nil) {
				d, ok := unjudgeableRead(x, st, factor, r.Variant)
				key := fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Col)
				if ok && !seen[key] {
					seen[key] = true
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// unjudgeableRead checks the limits one metric read sets on a run: the first below its
// quiet lateness makes the diagnostic.
func unjudgeableRead(x read, st scenario.Settings, factor float64, variant string) (scenario.Diagnostic, bool) {
	if x.check == nil {
		return scenario.Diagnostic{}, false
	}
	scale := shape.Scale(st.TimeScale)
	for _, l := range tolerances([]read{x}, st, scale, nil) {
		floor, judged := quietLateness[l.Src+"."+l.Stat]
		if !judged {
			continue
		}
		if l.Src == SrcLink && x.expect != nil && strings.HasPrefix(x.metric, "latency_ms.") {
			// An expect check is judged on its margin on the run's own metrics, up to one
			// RTT per trip: only that ceiling is known before the run.
			l.D, l.By = scale.D(st.Network.RTT), x.by+": its margin, at most one RTT per trip"
		}
		l.D = time.Duration(float64(l.D) * factor)
		if l.D >= floor {
			continue
		}
		return scenario.Diagnostic{File: x.check.File, Line: x.check.Line, Col: x.check.Col,
			Message: unjudgeableMessage(x, l, floor, st.TimeScale, variant)}, true
	}
	return scenario.Diagnostic{}, false
}

// unjudgeableMessage says which check, why it cannot be judged, and what would make it
// judgeable.
func unjudgeableMessage(x read, l Limit, floor time.Duration, timeScale float64, variant string) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	where := ""
	if variant != "default" {
		where = " (variant " + variant + ")"
	}
	msg := fmt.Sprintf("%s%s cannot be judged at time_scale %g: it lets the %s timers' %s lateness reach %s (%s), "+
		"below the %s that lateness reaches on a quiet machine, so its runs end noisy, without a verdict",
		x.metric, where, timeScale, l.Src, l.Stat, ms(l.D), strings.TrimPrefix(l.By, x.by+": "), ms(floor))
	var fixes []string
	if need := timeScale * float64(floor) / float64(l.D); need <= maxTimeScale {
		fixes = append(fixes, "time_scale "+roundUp(need)+" or more")
	}
	if alt := judgeableStat(x.metric, l); alt != "" {
		fixes = append(fixes, "a check on "+alt)
	}
	if len(fixes) == 0 {
		fixes = append(fixes, "a pause farther from the timeout, or no check that timing moves")
	}
	return msg + "; judgeable with " + strings.Join(fixes, ", or ")
}

// judgeableStat is a latency statistic of the same kind as metric whose limit, at the
// same tolerance, is at least its quiet lateness; "" when there is none.
func judgeableStat(metric string, l Limit) string {
	if l.Src != SrcLink || !strings.HasPrefix(metric, "latency_ms.") {
		return ""
	}
	if l.Stat == StatMax && l.D >= quietLateness[SrcLink+"."+StatP99] {
		return "latency_ms.p99 (judged on the link's p99)"
	}
	return "latency_ms.p50 (judged on the link's p50)"
}

// roundUp writes v rounded up to two significant digits.
func roundUp(v float64) string {
	e := int(math.Floor(math.Log10(v))) - 1 // the exponent of the second digit
	p := math.Pow(10, float64(e))
	out := strconv.FormatFloat(math.Ceil(v/p-1e-9)*p, 'f', max(-e, 0), 64)
	if strings.Contains(out, ".") {
		out = strings.TrimSuffix(strings.TrimRight(out, "0"), ".")
	}
	return out
}
