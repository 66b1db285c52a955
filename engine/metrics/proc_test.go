package metrics

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestParseRSS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"Name:\tx\nVmHWM:\t  9000 kB\nVmRSS:\t    1234 kB\nRssAnon:\t 1 kB\n", 1234 * 1024, true},
		{"VmRSS:\t0 kB", 0, true},
		{"Name:\tx\n", 0, false},
		{"VmRSS:\tlots kB\n", 0, false},
		{"VmRSS:\t12 MB\n", 0, false},
		{"VmRSS:\n", 0, false},
		{"VmRSS:\t99999999999999999999999 kB\n", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRSS([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRSS(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

const spikeBytes = 32 << 20

// TestProcProbe runs alone (not parallel) so the memory spike and the CPU burn are
// this test's own.
func TestProcProbe(t *testing.T) {
	if _, ok := readRSS(); !ok {
		t.Skip("no /proc/self/status VmRSS on this system") // skip: not Linux: not in .ci/allowed-skips, so CI fails on it
	}
	// Hand free heap back to the OS first, so the spike below has to fault in new
	// pages instead of reusing resident ones left by other tests.
	debug.FreeOSMemory()
	p := StartProcProbe(5 * time.Millisecond)
	start, _ := readRSS()

	// A 32 MiB spike, written so it is resident (clear, because a loop of single
	// writes is slow under the race detector), held for several samples and then
	// handed back to the OS before Stop.
	spike := make([]byte, spikeBytes)
	clear(spike)
	spike[len(spike)-1] = 1
	during, _ := readRSS()
	time.Sleep(50 * time.Millisecond)
	runtime.KeepAlive(spike)
	spike = nil
	debug.FreeOSMemory()

	// Burn at least 200 ms of CPU on this goroutine.
	burnStart := time.Now()
	x := 0
	for time.Since(burnStart) < 200*time.Millisecond {
		for i := range 10000 {
			x += i * i
		}
	}
	runtime.KeepAlive(x)

	cpu, peak := p.Stop()
	if peak < start+spikeBytes*3/4 {
		t.Errorf("peak RSS %d MiB, want at least %d MiB at start plus most of the %d MiB spike", peak>>20, start>>20, spikeBytes>>20)
	}
	if peak < during*9/10 {
		t.Errorf("peak RSS %d MiB below the %d MiB read during the spike", peak>>20, during>>20)
	}
	// Wall-clock burn of 200 ms gives at least ~100 ms of CPU even when the machine
	// is busy enough to take half our time slices.
	if cpu < 100*time.Millisecond {
		t.Errorf("CPU %v for a 200 ms busy loop", cpu)
	}
	if cpu > time.Minute {
		t.Errorf("CPU %v is not plausible for this test", cpu)
	}
	if c2, p2 := p.Stop(); c2 != cpu || p2 != peak {
		t.Errorf("second Stop = %v, %d; want the first %v, %d", c2, p2, cpu, peak)
	}
}

func TestProcProbeIdle(t *testing.T) {
	t.Parallel()
	p := StartProcProbe(0) // default interval
	time.Sleep(30 * time.Millisecond)
	cpu, peak := p.Stop()
	if peak == 0 {
		if _, ok := readRSS(); ok {
			t.Fatal("peak RSS 0 although /proc/self/status is readable")
		}
	}
	if cpu < 0 {
		t.Fatalf("negative CPU %v", cpu)
	}
}

func TestParseStatm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1234 567 89 1 0 300 0\n", 567, true},
		{"1234", 0, false},
		{"1234 x 89", 0, false},
		{"", 0, false},
	} {
		got, ok := parseStatm([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseStatm(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestStatmIsVmRSS: the sample read from statm is the figure status reports as VmRSS
// (read just after it; allowed to differ by what the process touched in between).
func TestStatmIsVmRSS(t *testing.T) {
	fromStatm, ok := readRSS()
	data, err := os.ReadFile("/proc/self/status")
	if !ok || err != nil {
		t.Skip("no /proc on this system") // skip: not Linux: not in .ci/allowed-skips, so CI fails on it
	}
	fromStatus, ok := parseRSS(data)
	if !ok {
		t.Fatal("no VmRSS in /proc/self/status")
	}
	if d := int64(fromStatus) - int64(fromStatm); d < -1<<20 || d > 1<<20 {
		t.Errorf("statm RSS %d B, status VmRSS %d B: more than 1 MiB apart", fromStatm, fromStatus)
	}
}

// TestProbesShareOneSampler: overlapping probes (parallel runs) are served by one
// sampling goroutine, and each still sees a spike that happens while it is open.
func TestProbesShareOneSampler(t *testing.T) {
	if _, ok := readRSS(); !ok {
		t.Skip("no /proc on this system") // skip: not Linux: not in .ci/allowed-skips, so CI fails on it
	}
	debug.FreeOSMemory()
	probes := make([]*ProcProbe, 4)
	for i := range probes {
		probes[i] = StartProcProbe(5 * time.Millisecond)
	}
	start, _ := readRSS()
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	// Each sampling goroutine, started or not yet, names its creator.
	if got := strings.Count(string(buf[:n]), "created by github.com/kalab-dev/kalab/engine/metrics.(*rssSampler).add"); got != 1 {
		t.Errorf("%d RSS sampling goroutines for %d probes, want 1", got, len(probes))
	}
	spike := make([]byte, spikeBytes)
	clear(spike)
	time.Sleep(30 * time.Millisecond)
	runtime.KeepAlive(spike)
	for i, p := range probes {
		if _, peak := p.Stop(); peak < start+spikeBytes*3/4 {
			t.Errorf("probe %d: peak RSS %d MiB, want at least %d MiB at start plus most of the %d MiB spike", i, peak>>20, start>>20, spikeBytes>>20)
		}
	}
}
