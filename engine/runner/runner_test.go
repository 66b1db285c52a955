package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/testkit/plantest"

	"github.com/kalab-dev/kalab/engine/admit"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/metrics"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

func plan(t *testing.T, src string) *scenario.Plan { return plantest.Load(t, src) }

// planIn writes src as dir/s.yaml (beside the files a test put there) and loads it.
func planIn(t *testing.T, dir, src string) *scenario.Plan { return plantest.LoadIn(t, dir, src) }

// skipIfNoisy skips a test whose runs the machine could not time: their records carry no
// verdict, which is the engine working as designed, not the behaviour under test failing.
func skipIfNoisy(t *testing.T, out *Outcome) {
	t.Helper()
	for _, r := range out.Runs {
		if r.Timing != nil && r.Timing.Noisy {
			testci.SkipOrFail(t, "run %s/%s was noisy in %d attempts (%s): this machine is too busy to judge it", r.Scenario, r.Variant, r.Timing.Attempt, r.Timing.Reason)
		}
	}
}

func opts(t *testing.T) Options {
	return Options{Out: t.TempDir(), KalabVersion: "test", Log: zerolog.Nop(), Parallel: 2, HeadroomWait: 5 * time.Second}
}

// triedAll reports whether a run that stayed noisy used every attempt, or was refused one
// because the machine gave no headroom (waitHeadroom): both are the machine's verdict.
func triedAll(r *report.Run) bool {
	return r.Timing.Attempt == DefaultAttempts || strings.Contains(r.Error, "no headroom for another")
}

// noisyReasons counts the attempts a run's reruns list as noisy (not its headroom probes).
func noisyReasons(r *report.Run) int {
	n := 0
	for _, why := range r.Timing.Reruns {
		if !strings.Contains(why, "headroom probe") {
			n++
		}
	}
	return n
}

func TestRunRecordsReuseAndNewConnections(t *testing.T) {
	t.Parallel()
	p := plan(t, `
name: reuse
network: {rtt: 20ms}
server: {tls: true}
load: {requests: 12, concurrency: 1}
variants:
  - name: reuse
    expect: ["connections == 1", "reused_requests == 11"]
  - name: new
    client: {keepalive: false}
    expect: ["connections == 12", "server_connections == 12", "tls_handshakes == 12"]
compare:
  - "variant('new').latency_ms.p50 > 2 * variant('reuse').latency_ms.p50"
`)
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 2 || len(out.Scenarios) != 1 {
		t.Fatalf("%d runs, %d scenarios", len(out.Runs), len(out.Scenarios))
	}
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %+v", r.Variant, r.Status, r.Error, r.Checks)
		}
		if r.Metrics.Requests != 12 || r.Metrics.Errors != 0 || r.Metrics.ProxyConnections != r.Metrics.Connections {
			t.Errorf("%s metrics %+v", r.Variant, r.Metrics)
		}
		if r.Clock != scenario.ClockVirtual {
			t.Errorf("%s ran on the %q clock, want virtual", r.Variant, r.Clock)
		}
		// On the virtual clock each request costs exactly its round trips at 20 ms: a new
		// connection 3 (the SYN, TLS 1.3's one, the request), a reused one 1. The reuse run
		// opens one and reuses it 11 times (60 + 11 x 20 = 280 ms in all); the new run opens
		// one per request (12 x 60 = 720 ms).
		total := 0.0
		for _, rq := range readRequests(t, filepath.Join(out.Dir, r.RequestsFile)) {
			want := 60.0
			if rq.Reused {
				want = 20
			}
			if rq.LatencyMs != want {
				t.Errorf("%s: request %d (reused %v) took %v ms, want %v", r.Variant, rq.Seq, rq.Reused, rq.LatencyMs, want)
			}
			total += rq.LatencyMs
		}
		if want := map[string]float64{"reuse": 280, "new": 720}[r.Variant]; total != want || r.Metrics.TotalMs != want {
			t.Errorf("%s: requests add up to %v ms, total_ms %v; want %v", r.Variant, total, r.Metrics.TotalMs, want)
		}
	}
	if s := out.Scenarios[0]; s.Status != report.StatusPass || len(s.Checks) != 1 || len(s.Checks[0].Observed) != 2 {
		t.Errorf("scenario record %+v", s)
	}
	if out.Failed() || out.Errored() {
		t.Error("outcome reports a failure")
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(out.Dir, "requests", "reuse", "new.jsonl"))
	if n := strings.Count(string(data), "\n"); n != 12 {
		t.Errorf("request file has %d lines; want 12", n)
	}
}

func TestFailingExpectIsRecorded(t *testing.T) {
	t.Parallel()
	p := plan(t, "name: f\nload: {requests: 3}\nexpect: [\"connections == 3\"]\n")
	out, err := Execute(context.Background(), p, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	if r.Status != report.StatusFail || r.Checks[0].Pass || r.Checks[0].Observed["connections"] != 1 {
		t.Fatalf("record %+v", r)
	}
	if !out.Failed() || out.Errored() {
		t.Error("a failed check must fail the outcome without being an engine error")
	}
}

func TestSameSeedSameScheduleAndCounts(t *testing.T) {
	t.Parallel()
	// Pauses either under or over the server's 120 ms idle close: a connection survives a
	// short pause and is replaced after a long one, so the seed alone decides the count.
	// Pick a seed whose pauses all keep 40 ms clear of the close, so that the test also
	// shows pauses both sides of it.
	spec := load.Spec{Requests: 40, Burst: 4, PauseMin: 10 * time.Millisecond, PauseMax: 250 * time.Millisecond}
	var pauses []time.Duration
	for spec.Seed = 1; spec.Seed < 10000; spec.Seed++ {
		pauses = load.Pauses(spec)
		clear := true
		for _, p := range pauses {
			if p > 80*time.Millisecond && p < 160*time.Millisecond {
				clear = false
			}
		}
		if clear {
			break
		}
	}
	long := 0
	for _, p := range pauses {
		if p >= 160*time.Millisecond {
			long++
		}
	}
	src := fmt.Sprintf("name: seeded\nserver: {idle_timeout: 120ms}\nclient: {idle_timeout: none}\nload: {requests: 40, burst: 4, pause: 10ms..250ms, seed: %d}\n", spec.Seed)
	var gaps [2][]float64
	var conns [2]float64
	for i := range gaps {
		out, err := Execute(context.Background(), plan(t, src), virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		if c := out.Runs[0].Clock; c != scenario.ClockVirtual {
			t.Fatalf("the run went on the %q clock, want virtual", c)
		}
		conns[i] = out.Runs[0].Metrics.Connections
		data, _ := os.ReadFile(filepath.Join(out.Dir, out.Runs[0].RequestsFile))
		var prev float64
		for j, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rq report.Request
			if err := json.Unmarshal([]byte(line), &rq); err != nil {
				t.Fatal(err)
			}
			if j%4 == 0 && j > 0 {
				gaps[i] = append(gaps[i], rq.StartMs-prev)
			}
			prev = rq.StartMs + rq.LatencyMs
		}
	}
	if len(gaps[0]) != len(pauses) {
		t.Fatalf("%d pauses; want %d", len(gaps[0]), len(pauses))
	}
	// On the virtual clock no pause timer is late: each gap is the drawn pause, to the
	// nanosecond the records keep (the subtraction of two float milliseconds leaves a
	// little noise below that), and both runs give the same gaps.
	for j := range gaps[0] {
		want := float64(pauses[j]) / float64(time.Millisecond)
		if gaps[0][j] != gaps[1][j] {
			t.Errorf("pause %d: %v ms in the first run, %v in the second", j, gaps[0][j], gaps[1][j])
		}
		for i := range gaps {
			if d := gaps[i][j] - want; math.Abs(d) > 1e-6 {
				t.Errorf("run %d pause %d: %v ms; the seed drew %v ms", i, j, gaps[i][j], want)
			}
		}
	}
	if long == 0 || long == len(pauses) {
		t.Fatalf("seed %d: %d of %d pauses past the idle close; want some on each side", spec.Seed, long, len(pauses))
	}
	if want := float64(1 + long); conns[0] != want || conns[1] != want {
		t.Errorf("connections %v; want %v for both (1 + %d pauses past the idle close)", conns, want, long)
	}
}

func TestDeadlineEndsARunAsError(t *testing.T) {
	t.Parallel()
	p := plan(t, "name: slow\nserver: {response: {delay: 2s}}\nload: {requests: 40}\n")
	o := opts(t)
	o.DeadlineScale = 0.01 // 30 s floor -> 300 ms
	start := time.Now()
	out, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	if r.Status != report.StatusError || !strings.Contains(r.Error, "deadline") {
		t.Fatalf("status %s error %q", r.Status, r.Error)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the run took %v past its deadline", time.Since(start))
	}
	if !out.Errored() {
		t.Error("Errored() is false")
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
}

func TestInterruptRecordsRunsInFlight(t *testing.T) {
	t.Parallel()
	p := plan(t, `
name: long
network: {rtt: 20ms}
load: {requests: 1000}
variants: [{name: a}, {name: b}, {name: c}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	o := opts(t)
	o.Parallel = 1
	out, err := Execute(ctx, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || len(out.Runs) != 1 || out.Runs[0].Status != report.StatusInterrupted {
		t.Fatalf("interrupted=%v runs=%d", out.Interrupted, len(out.Runs))
	}
	if n := out.Runs[0].Metrics.Requests; n == 0 || n >= 1000 {
		t.Errorf("interrupted run counted %v requests", n)
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	p := plan(t, "name: filt\nload: {requests: 2}\nvariants: [{name: keep}, {name: drop}]\ncompare: [\"variant('drop').errors == 0\"]\n")
	o := opts(t)
	o.Filter = regexp.MustCompile(`/keep$`)
	out, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 || out.Runs[0].Variant != "keep" {
		t.Fatalf("runs %+v", out.Runs)
	}
	if c := out.Scenarios[0].Checks[0]; c.Verdict() != report.VerdictNotEvaluated || c.Pass || !strings.Contains(c.NotEvaluated, "filtered out") {
		t.Errorf("a compare over a filtered-out variant must be not evaluated, never passed: %+v", c)
	}
	if s := out.Scenarios[0].Status; s != report.StatusNotEvaluated {
		t.Errorf("scenario status %s; want %s", s, report.StatusNotEvaluated)
	}
	o.Filter = regexp.MustCompile(`nothing`)
	if _, err := Execute(context.Background(), p, o); err != ErrNoRuns {
		t.Errorf("err = %v; want ErrNoRuns", err)
	}
}

func TestBudgetKeepsLargeRunsApart(t *testing.T) {
	t.Parallel()
	b := admit.NewBudget(100)
	ctx := context.Background()
	if got := b.Acquire(ctx, 60); got != 60 {
		t.Fatalf("acquire(60) = %d", got)
	}
	done := make(chan int)
	go func() { done <- b.Acquire(ctx, 500) }() // larger than the budget: waits to run alone
	select {
	case n := <-done:
		t.Fatalf("a run larger than the budget started beside another (%d)", n)
	case <-time.After(50 * time.Millisecond):
	}
	b.Release(60)
	if n := <-done; n != 100 {
		t.Fatalf("acquire(500) took %d; want the whole budget, 100", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	if n := b.Acquire(cctx, 1); n != 0 {
		t.Fatalf("acquire after cancel = %d; want 0", n)
	}
}

// The metrics package and the assertion vocabulary must agree on every name: a key the
// aggregator emits under another name would silently read as 0 in every check.
func TestMetricNamesAgree(t *testing.T) {
	t.Parallel()
	for _, k := range metrics.FlatKeys() {
		if !check.IsName(k) {
			t.Errorf("metrics emits %q, which assertions cannot read", k)
		}
	}
}
