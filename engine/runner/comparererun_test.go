package runner

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/report"
)

// TestUnjudgedCompareRerunsItsRunsAlone: a compare the link's lateness leaves without a
// verdict has its runs run once more, alone, and is judged on the reruns. By hand: x and y
// are the same run (20 ms RTT, reused requests: p50 about 20.3 ms), so x / y is about 1.00
// against a bound of 1.04. Each run's own tolerance for a compare's latency is RTT/10 over
// its 3 trips (0.67 ms); 0.5 ms held on every trip of the first attempts keeps each run
// inside it, but lets y's p50 be up to 3 x 0.5 = 1.5 ms lower than observed, and
// 20.3 / 18.8 = 1.08 is past 1.04: not evaluated. With the lateness only on the first
// attempts, the reruns (alone, no lateness held) judge it: pass. With the lateness on the
// reruns too, it stays not evaluated; with reruns off (--attempts 1) nothing is rerun.
func TestUnjudgedCompareRerunsItsRunsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("real timers for a few seconds") // skip: only with -short, which CI does not pass
	}
	const src = "name: cmp\nnetwork: {rtt: 20ms}\nload: {requests: 20, concurrency: 1}\n" +
		"variants:\n  - name: x\n  - name: y\n" +
		"compare: [\"variant('x').latency_ms.p50 / variant('y').latency_ms.p50 <= 1.04\"]\n"
	run := func(t *testing.T, heldAttempts int64, attempts int) *Outcome {
		t.Helper()
		var made atomic.Int64
		o := opts(t)
		o.newTimers = func() *judge.Timers {
			tm := &judge.Timers{}
			if made.Add(1) <= heldAttempts {
				tm.Link.Hold(500 * time.Microsecond)
			}
			return tm
		}
		o.Attempts = attempts
		out, err := Execute(context.Background(), plan(t, src), o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	verdict := func(out *Outcome) (string, string) {
		c := out.Scenarios[0].Checks[0]
		return c.Verdict(), c.NotEvaluated
	}
	for _, r := range run(t, 0, DefaultAttempts).Runs {
		roomToInject(t, !r.Timing.Noisy && r.Timing.Attempt == 1, "without injected lateness %s needed %d attempts (%s)", r.Variant, r.Timing.Attempt, r.Timing.Reason)
	}

	out := run(t, 2, DefaultAttempts)
	got, why := verdict(out)
	// Both rerun, with no lateness held, and still unjudged: the machine's own timing kept it so.
	roomToInject(t, got != report.VerdictNotEvaluated || out.Runs[0].Timing.Attempt != 2 || out.Runs[1].Timing.Attempt != 2,
		"the reruns, alone and with no lateness held, still left the compare unjudged: %s", why)
	if got != report.VerdictPass {
		t.Fatalf("with the lateness on the first attempts only: verdict %s (%s), want pass after the reruns", got, why)
	}
	for _, r := range out.Runs {
		if r.Timing.Attempt != 2 || len(r.Timing.Reruns) == 0 || !strings.Contains(r.Timing.Reruns[len(r.Timing.Reruns)-1], "rerun alone for a compare check") {
			t.Errorf("%s: attempt %d, reruns %q: want the second attempt, rerun for the compare", r.Variant, r.Timing.Attempt, r.Timing.Reruns)
		}
	}
	res, err := report.ReadFile(filepath.Join(out.Dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Runs[0].Timing.Attempt != 2 || res.Runs[1].Timing.Attempt != 2 {
		t.Errorf("results.jsonl holds %d run records; want the two reruns, each once", len(res.Runs))
	}

	if got, why := verdict(run(t, 1<<20, DefaultAttempts)); got != report.VerdictNotEvaluated || !strings.HasPrefix(why, judge.TimingUnjudged) {
		t.Errorf("with the lateness on the reruns too: verdict %s (%s), want not evaluated for the timing", got, why)
	}
	out = run(t, 2, 1)
	if got, _ := verdict(out); got != report.VerdictNotEvaluated {
		t.Errorf("with --attempts 1: verdict %s, want not evaluated", got)
	}
	for _, r := range out.Runs {
		if r.Timing.Attempt != 1 {
			t.Errorf("with --attempts 1, %s ran %d times", r.Variant, r.Timing.Attempt)
		}
	}
}

// TestRealTimerComparesAreRerunAlone: a compare that reads a real server's idle close, or
// a paced accept loop's counts on the real clock, holds its runs and reruns them alone
// when the machine left it without a verdict, as a latency compare does; one that reads a
// count of the embedded server with no paced accept loop does not.
func TestRealTimerComparesAreRerunAlone(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      bool
	}{
		{"a real server's idle close", "name: a\nnetwork: {rtt: 50ms}\nvariants:\n  - {name: real, server: {command: \"srv {port}\"}}\n  - {name: model}\n" +
			"compare: [\"abs(variant('real').server_idle_close_ms.p50 - variant('model').server_idle_close_ms.p50) < 50\"]\n", true},
		{"a paced accept loop's errors", "name: a\nclock: real\nnetwork: {rtt: 50ms}\nserver: {backlog: 4, accept_delay: 2ms}\nvariants:\n  - {name: x}\n  - {name: y}\n" +
			"compare: [\"variant('x').errors > variant('y').errors\"]\n", true},
		{"the same on the virtual clock", "name: a\nclock: virtual\nnetwork: {rtt: 50ms}\nserver: {backlog: 4, accept_delay: 2ms}\nvariants:\n  - {name: x}\n  - {name: y}\n" +
			"compare: [\"variant('x').errors > variant('y').errors\"]\n", false},
		{"the embedded server's counts", "name: a\nclock: real\nnetwork: {rtt: 50ms}\nvariants:\n  - {name: x}\n  - {name: y}\n" +
			"compare: [\"variant('x').errors > variant('y').errors\"]\n", false},
		// A total time, as 09-http2-burst's compare reads: the CPU other processes took can
		// leave it unjudged beside the suite's real programs, and alone it has a verdict.
		{"a total time", "name: a\nclock: real\nnetwork: {rtt: 50ms}\nvariants:\n  - {name: x}\n  - {name: y}\n" +
			"compare: [\"variant('x').total_ms < variant('y').total_ms\"]\n", true},
	} {
		p := plan(t, tc.src)
		if got := holdsRuns(p.Scenarios[0]); got != tc.want {
			t.Errorf("%s: holds its runs for a rerun: %v, want %v", tc.name, got, tc.want)
		}
	}
}
