//go:build linux

package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/admit"

	"github.com/kalab-dev/kalab/engine/report"
)

// budgetChildEnv makes the test binary run budgetChild: it lowers its own descriptor limit,
// which must not leak into the other tests.
const budgetChildEnv = "KALAB_BUDGET_CHILD"

// TestDescriptorBudgetAtTheUsualLimit runs, in a child process whose limit is 1,024 soft and
// 20,000 hard (the usual hard limit of a shared machine), a 10,000-request HTTP/2 burst, which
// must run (about 400 descriptors) and hold no more descriptors than its budget says, and a
// plan of 10,000 held proxied HTTP/1.1 connections, which must be refused before it starts
// with the exact count: 10,001 connections × 4, the reserve and what is already open.
func TestDescriptorBudgetAtTheUsualLimit(t *testing.T) {
	if os.Getenv(budgetChildEnv) == "1" {
		f := budgetChild(t)
		line, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s%s\n", budgetResultTag, line)
		return
	}
	if testing.Short() {
		t.Skip("a 10,000-request burst") // skip: only with -short, which CI does not pass
	}
	t.Parallel()
	f := runBudgetChild(t)
	t.Logf("figures: %+v", f)
}

// budgetResultTag starts the child's line of figures (budgetFigures as JSON).
const budgetResultTag = "BUDGET CHILD FIGURES "

// budgetFigures is what budgetChild measured under a limit of 1,024 soft and 20,000 hard.
type budgetFigures struct {
	HeldNeed         int     // the limit 10,000 held proxied HTTP/1.1 connections need (refused)
	BurstRequests    int     // the 10,000-request HTTP/2 burst: requests that went through
	BurstErrors      int     // its errors
	BurstConnections int     // the connections it opened
	BurstBudget      int     // the descriptors its budget set aside
	BurstPeak        int     // the most descriptors it held at once (beyond those open before)
	BurstWallMs      float64 // its wall time
}

// runBudgetChild runs budgetChild in a child process, whose descriptor limit may be lowered
// without touching the other tests, and returns its figures; the child's assertions fail tb.
func runBudgetChild(tb testing.TB) budgetFigures {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDescriptorBudgetAtTheUsualLimit$", "-test.v")
	cmd.Env = append(os.Environ(), budgetChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if _, bench := tb.(*testing.B); !bench {
		tb.Logf("child:\n%s", out)
	}
	if err == nil && bytes.Contains(out, []byte("--- SKIP")) {
		tb.Skipf("the child skipped:\n%s", out) // skip: the child's own skip (its hard limit, below), passed on
	}
	_, line, found := bytes.Cut(out, []byte(budgetResultTag))
	if err != nil || !found {
		tb.Fatalf("child: %v\n%s", err, out)
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	var f budgetFigures
	if err := json.Unmarshal(line, &f); err != nil {
		tb.Fatalf("child's figures %q: %v", line, err)
	}
	return f
}

// BenchmarkDescriptorBudget runs the child of TestDescriptorBudgetAtTheUsualLimit (limit
// 1,024 soft and 20,000 hard, the usual hard limit of a shared machine) and reports what it
// measured: the limit 10,000 held proxied HTTP/1.1 connections would need (refused before
// they start), and for a 10,000-request HTTP/2 burst the descriptors its budget set aside,
// the most it held at once, its connections, errors and wall time. examples/bench prints
// the same two rows from the kalab binary. Run it with
// go test -run '^$' -bench DescriptorBudget -benchtime 1x ./engine/runner
func BenchmarkDescriptorBudget(b *testing.B) {
	var f budgetFigures
	for range b.N {
		f = runBudgetChild(b)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(f.HeldNeed), "held-10000-need-fds")
	b.ReportMetric(float64(f.BurstBudget), "burst-budget-fds")
	b.ReportMetric(float64(f.BurstPeak), "burst-peak-fds")
	b.ReportMetric(float64(f.BurstConnections), "burst-conns")
	b.ReportMetric(float64(f.BurstErrors), "burst-errors")
	b.ReportMetric(f.BurstWallMs, "burst-wall-ms")
}

func budgetChild(t *testing.T) budgetFigures {
	var f budgetFigures
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 20000 {
		t.Skipf("the hard limit here is %d, below the 20,000 this test sets", lim.Max) // skip: a machine setting, not load: not in .ci/allowed-skips, so CI fails on it
	}
	lim = syscall.Rlimit{Cur: 1024, Max: 20000}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}

	// 10,000 held proxied HTTP/1.1 connections: refused, with the count.
	held := plan(t, `
name: held
network: {rtt: 2ms}
load: {requests: 10000, concurrency: 10000}
`)
	out, err := Execute(context.Background(), held, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	// Refused before it starts, as an engine error of that run, never as request errors.
	rec := out.Runs[0]
	if rec.Status != report.StatusError || rec.Metrics.Requests != 0 {
		t.Fatalf("10,000 proxied connections under a hard limit of 20,000: status %s, %v requests; want a run refused before it starts", rec.Status, rec.Metrics.Requests)
	}
	t.Logf("refused: %s", rec.Error)
	if _, err := fmt.Sscanf(rec.Error, "not started: needs %d file descriptors", &f.HeldNeed); err != nil {
		t.Errorf("message %q: %v", rec.Error, err)
	}
	for _, want := range []string{
		"not started: needs ",
		fmt.Sprintf("file descriptors: %d for 10001 connections × 4 (client, link proxy ×2, server), %d reserved,", 10001*4, admit.Reserve),
		"already open; the limit is 20000",
	} {
		if !strings.Contains(rec.Error, want) {
			t.Errorf("message %q lacks %q", rec.Error, want)
		}
	}

	// A 10,000-request HTTP/2 burst: admitted, and it holds what its budget says.
	burst := plan(t, `
name: burst
network: {rtt: 2ms}
server: {http: "2"}
load: {requests: 10000, concurrency: 10000}
expect: ["errors == 0"]
`)
	h := admit.HoldOf(burst.Scenarios[0].Runs[0].Settings)
	base := admit.OpenDescriptors()
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak.Store(max(peak.Load(), int64(admit.OpenDescriptors())))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	out, err = Execute(context.Background(), burst, opts(t))
	f.BurstWallMs = float64(time.Since(start).Microseconds()) / 1e3
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("the 10,000-request HTTP/2 burst was not admitted: %v", err)
	}
	r := out.Runs[0]
	t.Logf("burst: %s, %v requests, %v connections, %v errors; budget %d descriptors (%s); peak %d open, %d before",
		r.Status, r.Metrics.Requests, r.Metrics.Connections, r.Metrics.Errors, h.FDs, h.Per, peak.Load(), base)
	// 10,000 streams at once keep both cores busy, so the link's timers may run late and
	// the run end without a verdict (timing.go); what this test guards is that the budget
	// admitted it and its requests all went through.
	if strings.Contains(r.Error, "file descriptors") {
		t.Errorf("burst refused by the descriptor budget: %s", r.Error)
	}
	if r.Status == report.StatusError {
		t.Logf("burst ended without a verdict: %s", r.Error)
	}
	if r.Metrics.Requests != 10000 || r.Metrics.Errors != 0 {
		t.Errorf("burst: %v requests, %v errors; want 10000 and 0", r.Metrics.Requests, r.Metrics.Errors)
	}
	// The results files and listeners of the run itself fit in a few tens.
	if used := int(peak.Load()) - base; used > h.FDs+64 {
		t.Errorf("the burst held %d descriptors; its budget says %d (%s)", used, h.FDs, h.Per)
	}
	f.BurstRequests, f.BurstErrors, f.BurstConnections = int(r.Metrics.Requests), int(r.Metrics.Errors), int(r.Metrics.Connections)
	f.BurstBudget, f.BurstPeak = h.FDs, int(peak.Load())-base
	return f
}
