package lag

import "time"

// GroupWait measures, over a span, how long the threads of a process group kalab started
// (a real server program: nginx's master and workers, Node and its helper threads) were
// ready to run but waited for a core, and which part of that the machine's other processes
// caused. CPUWait does the same for kalab's own threads; a program in a process of its own
// is not in it. A timer of the program (its idle close) fires when its thread gets a core,
// so the whole wait of the group's threads over the span bounds how late any one of its
// wake-ups was made by waiting: a timer's lateness from the CPU is part of that sum.
type GroupWait struct {
	pgid int
	at   groupSample
	ok   bool
}

// groupSample is the group's threads' run-queue delay and CPU time, and the machine's.
type groupSample struct {
	waits threadWaits   // by thread id, every thread of every process of the group
	cpu   time.Duration // the group's user and system CPU time
	sys   sysCPU        // the machine's busy and stolen CPU, and kalab's own CPU as self
}

// StartGroupWait begins a span over the process group pgid; where the system does not
// say, or no process of the group is left, the span reports nothing.
func StartGroupWait(pgid int) GroupWait {
	s, ok := sampleGroup(pgid)
	return GroupWait{pgid: pgid, at: s, ok: ok}
}

// Split returns the group's wait since the span began, divided by whose work its threads
// queued behind: neighbours is the machine's other processes' part (the delay times the
// share of the machine's busy CPU that was neither the group's nor kalab's, plus the
// group's share of steal), own the rest (behind each other and behind kalab, which a run
// has alone too). false when the system does not say.
func (g GroupWait) Split() (own, neighbours time.Duration, ok bool) {
	if !g.ok {
		return 0, 0, false
	}
	now, ok := sampleGroup(g.pgid)
	if !ok {
		return 0, 0, false
	}
	return splitGroup(g.at, now)
}

// splitGroup divides the group's delay between from and to (see Split).
func splitGroup(from, to groupSample) (own, neighbours time.Duration, ok bool) {
	delay := waited(from.waits, to.waits)
	both := func(s groupSample) sysCPU {
		return sysCPU{busy: s.sys.busy, steal: s.sys.steal, self: s.sys.self + s.cpu}
	}
	group := func(s groupSample) sysCPU { return sysCPU{busy: s.sys.busy, steal: s.sys.steal, self: s.cpu} }
	own, neighbours = split(delay, both(from), both(to))
	return own, neighbours + stolen(group(from), group(to)), true
}

// sampleGroup reads the group's threads and CPU and the machine's CPU.
func sampleGroup(pgid int) (groupSample, bool) {
	if pgid <= 0 {
		return groupSample{}, false
	}
	waits, cpu, ok1 := readGroup(pgid)
	sys, ok2 := readSysCPU()
	return groupSample{waits: waits, cpu: cpu, sys: sys}, ok1 && ok2
}
