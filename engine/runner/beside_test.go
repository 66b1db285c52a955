package runner

import (
	"context"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// A run's wait for a core is measured for the whole process (lag.CPUWait), so the part
// called its own holds every run in flight beside it: two real runs side by side record
// all of their wait as others' (the CPU rules then count it, and a total_ms compare that
// another run's CPU moved is not evaluated), a run alone its own split. Not parallel: the
// mark is process-wide, and another test's runs would be beside these.
func TestBesideOtherRunsCountsAllWaitAsOthers(t *testing.T) {
	side := `
name: beside
network: {rtt: 2ms}
load: {requests: 6, burst: 1, pause: 80ms}
variants: [{name: a}, {name: b}]
`
	o := opts(t)
	o.Parallel = 2
	out, err := Execute(context.Background(), plan(t, side), o)
	if err != nil {
		t.Fatal(err)
	}
	end := func(r *report.Run) time.Time {
		return r.StartedAt.Add(time.Duration(r.WallMs * float64(time.Millisecond)))
	}
	a, b := out.Runs[0], out.Runs[1]
	overlapped := a.StartedAt.Before(end(b)) && b.StartedAt.Before(end(a))
	for _, r := range out.Runs {
		tm := r.Timing
		if tm == nil || tm.CPUWaitMs == nil {
			t.Skip("this system does not say how long threads waited for a core") // skip: non-Linux only
		}
		if overlapped && (!tm.BesideOtherRuns || *tm.CPUWaitNeighboursMs != *tm.CPUWaitMs) {
			t.Errorf("%s ran beside the other run: beside_other_runs %v, cpu_wait_neighbours_ms %v of cpu_wait_ms %v, want true and all of it",
				r.Variant, tm.BesideOtherRuns, *tm.CPUWaitNeighboursMs, *tm.CPUWaitMs)
		}
	}
	alone, err := Execute(context.Background(), plan(t, "name: alone\nnetwork: {rtt: 2ms}\nload: {requests: 3, burst: 1, pause: 50ms}\n"), opts(t))
	if err != nil {
		t.Fatal(err)
	}
	if tm := alone.Runs[0].Timing; tm.BesideOtherRuns {
		t.Errorf("a run alone in the process is marked beside other runs")
	}
	if !overlapped {
		t.Fatalf("the two runs did not overlap (%v and %v): nothing above was checked", out.Runs[0].StartedAt, out.Runs[1].StartedAt)
	}
}

// A mark sees a run in flight as it starts, and one that starts before it ends.
func TestBesideMarks(t *testing.T) {
	a := markRun()
	b := markRun() // starts while a is in flight
	if !b.beside() || !a.beside() {
		t.Error("two overlapping runs are not each beside the other")
	}
	c := markRun()
	if c.beside() {
		t.Error("a run alone is beside another")
	}
}
