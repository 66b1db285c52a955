package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	jobs, _, _, err := planJobs(p, Options{Parallel: DefaultParallel})
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
		exp := Expected(j.run, Options{})
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
	go feed(context.Background(), queue, []job{{idx: 0, alone: true}, {idx: 1}, {idx: 2}})
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
	jobs, _, _, err := planJobs(p, Options{Parallel: 1})
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
