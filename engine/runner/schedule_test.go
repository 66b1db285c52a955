package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// The bundled suite starts its runs alone first, then the longest expected first: the
// 62 s lb-idle-mismatch runs start at once instead of three minutes in (they ended the
// suite in file order), and every run is started exactly once.
func TestStartOrderLongestFirst(t *testing.T) {
	t.Parallel()
	files, err := scenario.FindFiles([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, _, err := planJobs(p, nil, Options{Parallel: DefaultParallel})
	if err != nil {
		t.Fatal(err)
	}
	order := startOrder(jobs, Options{})
	if len(order) != len(jobs) {
		t.Fatalf("%d jobs in start order, %d planned", len(order), len(jobs))
	}
	seen := map[int]bool{}
	alone, last := true, time.Duration(0)
	var firstShared *job
	for i, j := range order {
		if seen[j.idx] {
			t.Fatalf("job %d started twice", j.idx)
		}
		seen[j.idx] = true
		if j.alone && !alone {
			t.Errorf("%s/%s runs alone but starts after a run that does not", j.sc.Name, j.run.Variant)
		}
		if j.alone {
			continue
		}
		exp := j.c.Expected
		if alone {
			alone, last, firstShared = false, exp, &order[i]
		}
		if exp > last {
			t.Errorf("%s/%s (expected %v) starts after a shorter run (%v)", j.sc.Name, j.run.Variant, exp, last)
		}
		last = exp
	}
	if firstShared == nil || firstShared.sc.Name != "lb-idle-mismatch" {
		t.Errorf("the first run started beside others is %v; want one of lb-idle-mismatch's 62 s runs", firstShared)
	}
}

// A run alone is handed out with nothing after it until its record is taken.
func TestFeedWaitsForARunAlone(t *testing.T) {
	t.Parallel()
	queue := make(chan job)
	go feed(context.Background(), queue, []job{{c: &compile.Run{}, idx: 0, alone: true}, {c: &compile.Run{}, idx: 1}, {c: &compile.Run{}, idx: 2}}, 2)
	first := <-queue
	if first.idx != 0 || first.done == nil {
		t.Fatalf("first job %d (done channel %v); want the run alone, 0, with a done channel", first.idx, first.done != nil)
	}
	select {
	case j := <-queue:
		t.Fatalf("job %d was handed out while the run alone was in flight", j.idx)
	case <-time.After(50 * time.Millisecond):
	}
	close(first.done)
	for want := 1; want <= 2; want++ {
		if j := <-queue; j.idx != want {
			t.Fatalf("job %d handed out; want %d", j.idx, want)
		}
	}
	if _, open := <-queue; open {
		t.Fatal("the queue is still open after the last job")
	}
}

// Runs on the virtual clock go at most virtualAtOnce at once: the third of three is handed
// out only when one of the first two has ended, and the run on the real clock after them
// only when all three have.
func TestFeedLimitsVirtualRunsAtOnce(t *testing.T) {
	t.Parallel()
	queue := make(chan job)
	go feed(context.Background(), queue, []job{{c: &compile.Run{Settings: scenario.Settings{Clock: scenario.ClockVirtual}}, idx: 0}, {c: &compile.Run{Settings: scenario.Settings{Clock: scenario.ClockVirtual}}, idx: 1}, {c: &compile.Run{Settings: scenario.Settings{Clock: scenario.ClockVirtual}}, idx: 2}, {c: &compile.Run{}, idx: 3}}, 2)
	first, second := <-queue, <-queue
	none := func(while string) {
		t.Helper()
		select {
		case j := <-queue:
			t.Fatalf("job %d was handed out %s", j.idx, while)
		case <-time.After(50 * time.Millisecond):
		}
	}
	none("while two virtual runs were in flight")
	close(second.done)
	third := <-queue
	if third.idx != 2 {
		t.Fatalf("job %d handed out; want the third virtual run", third.idx)
	}
	close(first.done)
	none("while a virtual run was in flight")
	close(third.done)
	if j := <-queue; j.idx != 3 {
		t.Fatalf("job %d handed out; want the real run", j.idx)
	}
}

// No more runs on the virtual clock are in flight at once than GOMAXPROCS, here 2, with
// --parallel 8; and two are (the limit is not one at a time).
func TestVirtualRunsAtMostGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	src := "name: many\nclock: virtual\nnetwork: {rtt: 10ms}\nserver: {tls: true}\nclient: {keepalive: false}\nload: {requests: 40, concurrency: 4}\n" +
		"variants: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}, {name: f}]\n"
	o := virtualOpts(t)
	o.Parallel = 8
	obs := &inFlight{}
	o.Observer = obs
	out, err := Execute(context.Background(), plan(t, src), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Fatalf("%s: %s (%s)", r.Variant, r.Status, r.Error)
		}
	}
	if obs.peak != 2 {
		t.Errorf("%d virtual runs at once at GOMAXPROCS 2 and --parallel 8; want 2", obs.peak)
	}
}

// inFlight counts the runs between RunStarted and RunEnded, and the most at once.
type inFlight struct {
	mu        sync.Mutex
	now, peak int
}

func (o *inFlight) RunStarted(*scenario.Run, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now++
	o.peak = max(o.peak, o.now)
}

func (o *inFlight) RequestDone(*scenario.Run, bool) {}

func (o *inFlight) RunEnded(*scenario.Run, *report.Run) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now--
}

// Runs start longest first, but the records, the summary's runs and the scenario records
// stay in the plan's order.
func TestOutputsInPlanOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	short := "name: a-short\nnetwork: {rtt: 1ms}\nload: {requests: 2}\nvariants: [{name: one}, {name: two}]\n"
	long := "name: b-long\nnetwork: {rtt: 40ms}\nload: {requests: 6}\nvariants: [{name: three}]\n"
	var files []string
	for i, src := range []string{short, long} {
		f := filepath.Join(dir, []string{"a.yaml", "b.yaml"}[i])
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, _, err := planJobs(p, nil, Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if o := startOrder(jobs, Options{}); o[0].sc.Name != "b-long" {
		t.Fatalf("b-long does not start first (%s/%s does): the test no longer reorders anything", o[0].sc.Name, o[0].run.Variant)
	}
	opt := opts(t)
	opt.Parallel = 1
	out, err := Execute(context.Background(), p, opt)
	if err != nil {
		t.Fatal(err)
	}
	var runs, scs []string
	for _, r := range out.Runs {
		runs = append(runs, r.Variant)
	}
	for _, s := range out.Scenarios {
		scs = append(scs, s.Scenario)
	}
	if got := strings.Join(runs, ","); got != "one,two,three" {
		t.Errorf("runs in the order %s; want the plan's, one,two,three", got)
	}
	if got := strings.Join(scs, ","); got != "a-short,b-long" {
		t.Errorf("scenario records in the order %s; want the plan's, a-short,b-long", got)
	}
}
