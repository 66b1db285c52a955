//go:build linux

package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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
		budgetChild(t)
		return
	}
	if testing.Short() {
		t.Skip("a 10,000-request burst")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDescriptorBudgetAtTheUsualLimit$", "-test.v")
	cmd.Env = append(os.Environ(), budgetChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil || !strings.Contains(string(out), "BUDGET CHILD OK") {
		t.Fatalf("child: %v", err)
	}
}

func budgetChild(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 20000 {
		t.Skipf("the hard limit here is %d, below the 20,000 this test sets", lim.Max)
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
	for _, want := range []string{
		"not started: needs ",
		fmt.Sprintf("file descriptors: %d for 10001 connections × 4 (client, link proxy ×2, server), %d reserved,", 10001*4, reserve),
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
	h := runHold(burst.Scenarios[0].Runs[0].Settings)
	base := openDescriptors()
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak.Store(max(peak.Load(), int64(openDescriptors())))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	out, err = Execute(context.Background(), burst, opts(t))
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("the 10,000-request HTTP/2 burst was not admitted: %v", err)
	}
	r := out.Runs[0]
	t.Logf("burst: %s, %v requests, %v connections, %v errors; budget %d descriptors (%s); peak %d open, %d before",
		r.Status, r.Metrics.Requests, r.Metrics.Connections, r.Metrics.Errors, h.fds, h.per, peak.Load(), base)
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
	if used := int(peak.Load()) - base; used > h.fds+64 {
		t.Errorf("the burst held %d descriptors; its budget says %d (%s)", used, h.fds, h.per)
	}
	fmt.Println("BUDGET CHILD OK")
}
