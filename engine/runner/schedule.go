package runner

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// startOrder is the order the plan's jobs start in (each job keeps its idx, so records,
// the summary and the scenario records stay in the plan's order):
//   - first the runs that have the process to themselves (a burst of exclusiveConns
//     connections), one after another while nothing else is in flight, so that none waits
//     for every other run to end and then runs alone at the end of the suite;
//   - then the rest, the longest expected (compile.Run.Expected, from the plan alone) first, so that
//     the long runs overlap with the short ones instead of making the suite's tail: in file
//     order the 62 s runs of one file started three minutes into the suite and ended it
//     (results/baseline.jsonl of 2026-12-02).
//
// Ties keep the plan's order.
func startOrder(jobs []job, opt Options) []job {
	type keyed struct {
		j     job
		alone bool
		exp   time.Duration
	}
	ks := make([]keyed, len(jobs))
	for i, j := range jobs {
		ks[i] = keyed{j: j, alone: j.alone, exp: j.c.Expected}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if a.j.c.Virtual() != b.j.c.Virtual() {
			if a.j.c.Virtual() {
				return -1
			}
			return 1
		}
		if a.alone != b.alone {
			if a.alone {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.exp, a.exp)
	})
	out := make([]job, len(ks))
	for i, k := range ks {
		out[i] = k.j
	}
	return out
}

// feed hands the jobs to the workers in start order. A job that has the process to
// itself is waited for before the next one is handed out, so that it starts with nothing
// in flight and nothing starts beside it. It stops when ctx ends.
//
// The runs on the virtual clock come first, at most virtualAtOnce of them at once, and the
// first run on the real clock waits until they have all ended: their CPU would otherwise be
// taken from a real run's timing.
func feed(ctx context.Context, queue chan<- job, jobs []job, virtualAtOnce int) {
	defer close(queue)
	var virtual []chan struct{}
	slots := make(chan struct{}, max(virtualAtOnce, 1))
	for _, j := range jobs {
		if j.c.Virtual() {
			j.done = make(chan struct{})
			virtual = append(virtual, j.done)
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func(done <-chan struct{}) {
				select {
				case <-done:
				case <-ctx.Done():
				}
				<-slots
			}(j.done)
		} else {
			for _, done := range virtual {
				select {
				case <-done:
				case <-ctx.Done():
					return
				}
			}
			virtual = nil
		}
		if j.alone {
			j.done = make(chan struct{})
		}
		select {
		case queue <- j:
		case <-ctx.Done():
			return
		}
		if j.done == nil || j.c.Virtual() {
			continue
		}
		select {
		case <-j.done:
		case <-ctx.Done():
			return
		}
	}
}

// virtualAtOnce is how many runs on the virtual clock go at once: as many as the cores Go
// runs on (GOMAXPROCS, which follows the CPUs and a container's CPU limit), never more
// than --parallel. A virtual run waits on no clock, only on the CPU, so a run more than
// there are cores only shares them and adds the switching between them: on a 2-core
// machine the 59 bundled virtual runs took 15.6 s 8 at once, 6.75 s one at a time. Runs
// on the real clock keep --parallel and admission by headroom.
func virtualAtOnce(parallel int) int {
	return max(1, min(parallel, runtime.GOMAXPROCS(0)))
}

// inPlanOrder sorts scenario records in the order their scenarios appear in the plan (they
// are made as each scenario's last run ends, which the start order reorders).
func inPlanOrder(recs []*report.Scenario, plan *scenario.Plan) {
	pos := map[string]int{}
	for i, sc := range plan.Scenarios {
		pos[sc.File+"\x00"+sc.Name] = i
	}
	slices.SortStableFunc(recs, func(a, b *report.Scenario) int {
		return cmp.Compare(pos[a.File+"\x00"+a.Scenario], pos[b.File+"\x00"+b.Scenario])
	})
}
