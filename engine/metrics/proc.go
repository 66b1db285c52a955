package metrics

import (
	"bytes"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// DefaultProbeInterval is the RSS sampling interval StartProcProbe uses when given
// a non-positive one. One sampler serves every probe in flight (rssSampler), and a
// sample reads /proc/self/statm (about 3 µs) rather than /proc/self/status (about 40 µs,
// and one reader per parallel run: 13% of the suite's CPU in a profile), so
// sampling costs about 0.01% of one core however many runs overlap.
const DefaultProbeInterval = 20 * time.Millisecond

// ProcProbe measures this process's CPU time and peak resident memory over a window.
// Both are process-wide: when runs overlap, each probe sees the others' work too.
type ProcProbe struct {
	cpu0 time.Duration
	mu   sync.Mutex
	peak uint64

	once    sync.Once
	cpuUsed time.Duration
}

// StartProcProbe starts measuring: it notes the CPU time used so far and the RSS
// now, and has the process's one sampler (shared by every probe in flight) note
// VmRSS every interval until Stop; the peak is the highest of those samples. It
// leaves VmHWM alone (resetting it through /proc/self/clear_refs would corrupt the
// peak of any other probe running at the same time).
func StartProcProbe(interval time.Duration) *ProcProbe {
	if interval <= 0 {
		interval = DefaultProbeInterval
	}
	p := &ProcProbe{cpu0: lag.ProcessCPU()}
	p.sample()
	sampler.add(p, interval)
	return p
}

func (p *ProcProbe) sample() {
	if rss, ok := readRSS(); ok {
		p.observe(rss)
	}
}

func (p *ProcProbe) observe(rss uint64) {
	p.mu.Lock()
	p.peak = max(p.peak, rss)
	p.mu.Unlock()
}

// Stop ends the window and returns the CPU time (user + system, from getrusage)
// the process used since StartProcProbe, and the highest RSS sampled, in bytes. The
// peak is 0 where /proc is unavailable. Calling Stop again returns the same values.
func (p *ProcProbe) Stop() (cpu time.Duration, peakRSSBytes uint64) {
	p.once.Do(func() {
		sampler.remove(p)
		p.sample() // the end of the window counts too
		p.cpuUsed = max(lag.ProcessCPU()-p.cpu0, 0)
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cpuUsed, p.peak
}

// rssSampler is the process's one RSS sampler: while any probe is in flight, one
// goroutine reads RSS at the shortest interval any of them asked for and hands each
// sample to all of them.
type rssSampler struct {
	mu      sync.Mutex
	probes  map[*ProcProbe]time.Duration
	running bool
	wake    chan struct{} // a probe with a shorter interval came
}

var sampler = rssSampler{probes: make(map[*ProcProbe]time.Duration), wake: make(chan struct{}, 1)}

func (s *rssSampler) add(p *ProcProbe, interval time.Duration) {
	s.mu.Lock()
	s.probes[p] = interval
	start := !s.running
	s.running = true
	s.mu.Unlock()
	if start {
		go s.loop()
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *rssSampler) remove(p *ProcProbe) {
	s.mu.Lock()
	delete(s.probes, p)
	s.mu.Unlock()
}

// loop samples until no probe is left.
func (s *rssSampler) loop() {
	for {
		s.mu.Lock()
		if len(s.probes) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		interval := time.Duration(math.MaxInt64)
		for _, iv := range s.probes {
			interval = min(interval, iv)
		}
		s.mu.Unlock()
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-s.wake:
			t.Stop()
			continue
		}
		rss, ok := readRSS()
		if !ok {
			continue
		}
		s.mu.Lock()
		for p := range s.probes {
			p.observe(rss)
		}
		s.mu.Unlock()
	}
}

// statm is /proc/self/statm kept open: each read at offset 0 regenerates it.
var statm = sync.OnceValue(func() *os.File {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return nil
	}
	return f
})

// readRSS returns this process's resident set size in bytes: the second field of
// /proc/self/statm (pages, the same count as status's VmRSS), or where that cannot
// be read, status's VmRSS line.
func readRSS() (uint64, bool) {
	if f := statm(); f != nil {
		var buf [128]byte
		n, err := f.ReadAt(buf[:], 0)
		if n > 0 && (err == nil || err == io.EOF) {
			if pages, ok := parseStatm(buf[:n]); ok {
				return pages * uint64(os.Getpagesize()), true
			}
		}
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return parseRSS(b)
}

// parseStatm returns the resident pages of a /proc/<pid>/statm text ("size resident
// shared text lib data dt").
func parseStatm(b []byte) (uint64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil || pages > 1<<40 {
		return 0, false
	}
	return pages, true
}

var vmRSS = []byte("VmRSS:")

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
