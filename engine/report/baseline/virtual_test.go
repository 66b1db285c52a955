package baseline

import (
	"encoding/json"
	"testing"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
)

// TestVirtualRunNotExcusedByTheMachine: a run on the virtual clock is judged as what it
// is. The regression of the issue that found this (client RTT 20 -> 30 ms, p50 40 -> 50 ms,
// exact in model time) came back "noisy: machine: per request this run's threads waited
// 5.527 ms for a core", no verdict, because the baseline rule read the wait its threads
// had in real time as if it could have moved a simulated latency. The same figures here:
// on the virtual clock the p50 and the mean regress and the run fails; the same records
// marked real still get no verdict (the rule itself is not switched off); a virtual
// baseline run took nothing from the machine, so a real run against it is excused by the
// whole of its own wait.
func TestVirtualRunNotExcusedByTheMachine(t *testing.T) {
	t.Parallel()
	run := func(id, clock string, p50, mean, waitMs float64) *report.Run {
		r := withWait(baseRun("rtt", "default"), waitMs)
		r.RunID, r.Clock = id, clock
		r.Params = json.RawMessage(`{"network":{},"server":{},"client":{},"load":{"concurrency":1},"time_scale":1}`)
		r.Metrics.LatencyMs.P50, r.Metrics.LatencyMs.Mean = p50, mean
		return r
	}
	// p50 may reach 40 + 20% = 48 and the mean 40.2 + 30% = 52.26; 49.988 and 53 are over
	// by less than the 5.527 ms a request the current run's threads waited beyond the
	// baseline run's 0.1 (1,125.4 ms and 20 ms over 200 requests).
	base := run("base", "virtual", 40, 40.2, 20)
	cur := func(clock string) *report.Run { return run("now", clock, 49.988, 53, 1125.4) }
	cmp := &Comparer{Baseline: loadBase(t, base), Tolerances: &Tolerances{}}
	verdicts := func(r *report.Run) map[string]string {
		out := map[string]string{}
		for _, m := range cmp.CompareRun(r).Metrics {
			out[m.Metric] = m.Verdict
		}
		return out
	}
	for _, m := range []string{"latency_ms.p50", "latency_ms.mean"} {
		if v := verdicts(cur("virtual"))[m]; v != gate.VerdictRegressed {
			t.Errorf("virtual run: %s %s, want %s", m, v, gate.VerdictRegressed)
		}
		if v := verdicts(cur("real"))[m]; v != gate.VerdictMachine {
			t.Errorf("the same record on the real clock: %s %s, want %s", m, v, gate.VerdictMachine)
		}
	}
	r := cur("virtual")
	cmp.Apply(r)
	if r.Timing.Noisy || r.Status != report.StatusFail || len(r.Baseline.Regressed) != 2 {
		t.Errorf("virtual run against its baseline: noisy %v (%s), status %s, regressed %v; want a failed run with p50 and mean regressed",
			r.Timing.Noisy, r.Timing.Reason, r.Status, r.Baseline.Regressed)
	}

	// A real run against a virtual baseline: the baseline's figures are the model's, so
	// the whole of the real run's wait (5.627 ms a request) is what the machine could
	// have added. 53 - 5.627 is 47.4 <= 52.26: no verdict; against a real baseline that
	// waited as long, nothing is excused.
	real := &Comparer{Baseline: loadBase(t, run("base", "real", 40, 40.2, 1125.4)), Tolerances: &Tolerances{}}
	now := cur("real")
	if d := cmp.CompareRun(now); verdictOf(d, "latency_ms.mean") != gate.VerdictMachine {
		t.Errorf("real run against a virtual baseline: mean %s, want %s", verdictOf(d, "latency_ms.mean"), gate.VerdictMachine)
	}
	if d := real.CompareRun(now); verdictOf(d, "latency_ms.mean") != gate.VerdictRegressed {
		t.Errorf("real run against a real baseline that waited as long: mean %s, want %s", verdictOf(d, "latency_ms.mean"), gate.VerdictRegressed)
	}
}

// verdictOf is the verdict d gave metric.
func verdictOf(d gate.RunDiff, metric string) string {
	for _, m := range d.Metrics {
		if m.Metric == metric {
			return m.Verdict
		}
	}
	return ""
}

// TestVirtualRunGatedWithoutNoiseFloors: the time metrics' floors are real milliseconds of
// scheduler noise (total_ms at least 5 ms a request, p50 at least 3 ms), which no
// simulated time has. 200 requests in 1,000 ms: +15% allows 150 ms, the floor 1,000; a
// p50 of 2 ms: +20% allows 0.4, the floor 3. Between two virtual runs 1,400 ms and 2.5 ms
// regress; with either run on the real clock the floors stand and they do not.
func TestVirtualRunGatedWithoutNoiseFloors(t *testing.T) {
	t.Parallel()
	run := func(id, clock string, total, p50 float64) *report.Run {
		r := baseRun("fast", "default")
		r.RunID, r.Clock = id, clock
		r.Metrics.TotalMs, r.Metrics.LatencyMs.P50 = total, p50
		r.Metrics.RPS = r.Metrics.Requests / (total / 1000)
		return r
	}
	for _, tc := range []struct {
		old, cur string
		want     string
	}{
		{"virtual", "virtual", gate.VerdictRegressed},
		{"real", "virtual", gate.VerdictSame},
		{"virtual", "real", gate.VerdictSame},
		{"real", "real", gate.VerdictSame},
	} {
		cmp := &Comparer{Baseline: loadBase(t, run("base", tc.old, 1000, 2)), Tolerances: &Tolerances{}}
		d := cmp.CompareRun(run("now", tc.cur, 1400, 2.5))
		for _, m := range []string{"total_ms", "latency_ms.p50", "rps"} {
			if v := verdictOf(d, m); v != tc.want {
				t.Errorf("%s baseline, %s run: %s %s, want %s", tc.old, tc.cur, m, v, tc.want)
			}
		}
	}
}
