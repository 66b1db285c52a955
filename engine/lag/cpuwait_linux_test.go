package lag

import (
	"runtime"
	"sync"
	"testing"
	"time"
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
