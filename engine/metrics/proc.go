package metrics

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/lag"
)

// DefaultProbeInterval is the RSS sampling interval StartProcProbe uses when given
// a non-positive one: often enough to catch a run's peak, rare enough that reading
// /proc (about 40 µs a sample) costs about 0.2% of one core.
const DefaultProbeInterval = 20 * time.Millisecond

// ProcProbe measures this process's CPU time and peak resident memory over a window.
// Both are process-wide: when runs overlap, each probe sees the others' work too.
type ProcProbe struct {
	cpu0 time.Duration
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak uint64

	once    sync.Once
	cpuUsed time.Duration
}

// StartProcProbe starts measuring: it notes the CPU time used so far and samples
// VmRSS from /proc/self/status every interval until Stop. It leaves VmHWM alone
// (resetting it through /proc/self/clear_refs would corrupt the peak of any other
// probe running at the same time).
func StartProcProbe(interval time.Duration) *ProcProbe {
	if interval <= 0 {
		interval = DefaultProbeInterval
	}
	p := &ProcProbe{cpu0: lag.ProcessCPU(), stop: make(chan struct{}), done: make(chan struct{})}
	p.sample()
	go p.loop(interval)
	return p
}

func (p *ProcProbe) loop(interval time.Duration) {
	defer close(p.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.sample()
		}
	}
}

func (p *ProcProbe) sample() {
	rss, ok := readRSS()
	if !ok {
		return
	}
	p.mu.Lock()
	p.peak = max(p.peak, rss)
	p.mu.Unlock()
}

// Stop ends the window and returns the CPU time (user + system, from getrusage)
// the process used since StartProcProbe, and the highest RSS sampled, in bytes. The
// peak is 0 where /proc is unavailable. Calling Stop again returns the same values.
func (p *ProcProbe) Stop() (cpu time.Duration, peakRSSBytes uint64) {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.sample() // the end of the window counts too
		p.cpuUsed = max(lag.ProcessCPU()-p.cpu0, 0)
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cpuUsed, p.peak
}

var vmRSS = []byte("VmRSS:")

// readRSS returns the VmRSS line of /proc/self/status in bytes.
func readRSS() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return parseRSS(b)
}

// parseRSS finds "VmRSS:   1234 kB" in a /proc/<pid>/status text.
func parseRSS(status []byte) (uint64, bool) {
	i := bytes.Index(status, vmRSS)
	if i < 0 {
		return 0, false
	}
	line := status[i+len(vmRSS):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := bytes.Fields(line)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0, false
	}
	kb, err := strconv.ParseUint(string(f[0]), 10, 64)
	if err != nil || kb > 1<<44 {
		return 0, false
	}
	return kb * 1024, true
}
