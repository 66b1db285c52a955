package lag

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// readThreads reads /proc/self/task/<tid>/schedstat for every thread of the process: its
// run-queue delay (the second field, nanoseconds) and how many times it was given a core
// (the third).
func readThreads() (map[int]threadSched, bool) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	out := make(map[int]threadSched, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended between the listing and the read
		}
		ts, ok := parseSchedstatLine(b)
		if !ok {
			continue // a thread ending as it is read can leave an empty line
		}
		out[tid] = ts
	}
	return out, len(out) > 0
}

// readThreadWaits is each thread's run-queue delay (readThreads).
func readThreadWaits() (threadWaits, bool) {
	ts, ok := readThreads()
	if !ok {
		return nil, false
	}
	out := make(threadWaits, len(ts))
	for tid, t := range ts {
		out[tid] = t.wait
	}
	return out, true
}

// parseSchedstat returns the run-queue delay of a schedstat line: "run_ns wait_ns slices".
func parseSchedstat(b []byte) (time.Duration, bool) {
	ts, ok := parseSchedstatLine(b)
	return ts.wait, ok
}

// parseSchedstatLine returns the run-queue delay and the slices of a schedstat line; a
// line of two fields (no slice count) gives 0 slices.
func parseSchedstatLine(b []byte) (threadSched, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return threadSched{}, false
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || n < 0 {
		return threadSched{}, false
	}
	ts := threadSched{wait: time.Duration(n)}
	if len(f) >= 3 {
		if ts.slices, err = strconv.ParseInt(string(f[2]), 10, 64); err != nil || ts.slices < 0 {
			return threadSched{}, false
		}
	}
	return ts, true
}

// userHZ is the unit of /proc/stat's times: Linux reports them in USER_HZ, 100 per second
// on every architecture it exports to user space (man 5 proc).
const userHZ = 100

// readSysCPU reads the machine's busy and steal time from the "cpu" line of /proc/stat and
// this process's CPU time (ProcessCPU).
func readSysCPU() (sysCPU, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return sysCPU{}, false
	}
	s, ok := parseProcStat(b)
	if !ok {
		return sysCPU{}, false
	}
	s.self = ProcessCPU()
	return s, s.self > 0
}

// parseProcStat reads the aggregate "cpu" line: user nice system idle iowait irq softirq
// steal ...; busy is user+nice+system+irq+softirq.
func parseProcStat(b []byte) (sysCPU, bool) {
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) < 9 || string(f[0]) != "cpu" {
			continue
		}
		var v [8]int64
		for i := range v {
			n, err := strconv.ParseInt(string(f[i+1]), 10, 64)
			if err != nil || n < 0 {
				return sysCPU{}, false
			}
			v[i] = n
		}
		tick := time.Second / userHZ
		busy := v[0] + v[1] + v[2] + v[5] + v[6]
		return sysCPU{busy: time.Duration(busy) * tick, steal: time.Duration(v[7]) * tick}, true
	}
	return sysCPU{}, false
}
