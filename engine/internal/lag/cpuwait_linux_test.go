package lag

import (
	"context"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

func TestParseSchedstat(t *testing.T) {
	checkParser(t, "parseSchedstat", parseSchedstat, []parseCase{
		{"190071501 22014113 779\n", 22014113, true},
		{"0 0 1\n", 0, true},
		{"190071501\n", 0, false},
		{"1 -2 3\n", 0, false},
		{"", 0, false},
	})
}

func TestParseProcStat(t *testing.T) {
	in := "cpu  1200486 2084 638762 1674860 11482 0 35706 31086 0 0\ncpu0 603392 1105 246667 908751 2936 0 19141 15710 0 0\n"
	got, ok := parseProcStat([]byte(in))
	tick := time.Second / userHZ
	want := sysCPU{busy: (1200486 + 2084 + 638762 + 35706) * tick, steal: 31086 * tick}
	if !ok || got != want {
		t.Fatalf("parseProcStat = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := parseProcStat([]byte("cpu0 1 2 3 4 5 6 7 8\n")); ok {
		t.Error("a per-CPU line was taken for the aggregate one")
	}
}

// TestCPUWaitSeesContention runs more busy threads than the machine has cores: each
// thread beyond the cores has to wait, so the span must report about (threads - cores) x
// its length. Then a span that only sleeps must report far less.
func TestCPUWaitSeesContention(t *testing.T) {
	if _, ok := StartCPUWait().Wait(); !ok {
		t.Skip("this system has no per-thread run-queue delay (schedstat)") // skip: a kernel without schedstat: not in .ci/allowed-skips, so CI fails on it
	}
	cores := runtime.NumCPU()
	threads := 2 * cores
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
	const span = 400 * time.Millisecond

	w := StartCPUWait()
	busy(threads, span)
	got, _ := w.Wait()
	// The busy threads share the cores; every other process of the machine only takes
	// cores away from them, which adds to the wait.
	want := time.Duration(threads-cores) * span
	if got < want/2 {
		t.Errorf("%d busy threads on %d cores for %v waited %v in all; want at least %v (half of %v)", threads, cores, span, got, want/2, want)
	}

	w = StartCPUWait()
	time.Sleep(span)
	idle, _ := w.Wait()
	if idle >= got/4 {
		t.Errorf("a sleeping span waited %v, a contended one %v: the measure does not tell them apart", idle, got)
	}
	t.Logf("contended: %v waited (%d threads, %d cores, %v); sleeping: %v", got, threads, cores, span, idle)
}

// busy keeps n goroutines, each on a thread of its own, computing for d.
func busy(n int, d time.Duration) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			end := time.Now().Add(d)
			x := 0
			for time.Now().Before(end) {
				for i := range 1000 {
					x += i
				}
			}
			_ = x
		})
	}
	wg.Wait()
}

// TestCPUWaitSplitTellsOwnFromNeighbours: busy threads of this process beside twice as
// many busy processes make the wait mostly the neighbours' (they hold two thirds of the
// machine's busy CPU), and the process's own share of its wait is far larger when its
// threads compete only with each other (and whatever else the machine runs: the shared
// machine's other work is in both spans).
func TestCPUWaitSplitTellsOwnFromNeighbours(t *testing.T) {
	if _, _, ok := StartCPUWait().Split(); !ok {
		t.Skip("this system has no per-thread run-queue delay (schedstat)") // skip: a kernel without schedstat: not in .ci/allowed-skips, so CI fails on it
	}
	cores := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2 * cores))
	const span = 400 * time.Millisecond

	w := StartCPUWait()
	busy(2*cores, span)
	own, others, _ := w.Split()
	aloneShare := float64(own) / float64(own+others)
	t.Logf("without hogs: own %v, neighbours %v", own, others)
	if aloneShare < 0.6 {
		// The machine's other work already took most of the wait: beside the hogs the
		// share could not fall to half of it, so the split cannot be told apart here.
		testci.SkipOrFail(t, "without hogs the process's own share of its wait was %.2f (own %v, neighbours %v): the machine is too busy to tell the two apart", aloneShare, own, others)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var hogs []*exec.Cmd
	for range 2 * cores {
		c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, c)
	}
	defer func() {
		for _, c := range hogs {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	time.Sleep(50 * time.Millisecond) // the hogs are running
	w = StartCPUWait()
	busy(cores, span)
	own, others, _ = w.Split()
	if others <= own {
		t.Errorf("%d busy threads beside %d busy processes on %d cores: own wait %v, neighbours' %v; want mostly the neighbours'", cores, 2*cores, cores, own, others)
	}
	t.Logf("beside %d hogs: own %v, neighbours %v", 2*cores, own, others)
	if hogShare := float64(own) / float64(own+others); aloneShare < 2*hogShare {
		t.Errorf("the process's own share of its wait was %.2f without hogs and %.2f beside them; want at least twice as much without", aloneShare, hogShare)
	}
}

func TestParseSchedstatLine(t *testing.T) {
	if got, ok := parseSchedstatLine([]byte("190071501 22014113 779\n")); !ok || got != (threadSched{wait: 22014113, slices: 779}) {
		t.Errorf("parseSchedstatLine = %+v, %v; want wait 22014113, 779 slices", got, ok)
	}
	if _, ok := parseSchedstatLine([]byte("1 2 -3\n")); ok {
		t.Error("a negative slice count parsed")
	}
}

// TestRunQueueSeesContention: threads of this process that outnumber the cores wait for a
// core each time they get one, a slice's length or so; a span whose threads only wake from
// short sleeps waits far less per slice (on a busy shared machine both rise: the test
// compares them, and logs both).
func TestRunQueueSeesContention(t *testing.T) {
	cores := runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3 * cores))
	const span = 300 * time.Millisecond
	q := StartRunQueue()
	busy(3*cores, span)
	contended, ok := q.Mean()
	if !ok {
		t.Skip("this system has no per-thread run-queue delay (schedstat)") // skip: a kernel without schedstat: not in .ci/allowed-skips, so CI fails on it
	}
	q = StartRunQueue()
	for end := time.Now().Add(span); time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	idle, _ := q.Mean()
	t.Logf("mean wait per slice: %v with %d busy threads on %d cores, %v waking from 1 ms sleeps", contended, 3*cores, cores, idle)
	if contended < 2*idle || contended < 500*time.Microsecond {
		t.Errorf("mean wait per slice %v with %d busy threads on %d cores, %v when sleeping; want the contended span at least twice the sleeping one and 0.5 ms", contended, 3*cores, cores, idle)
	}
}
