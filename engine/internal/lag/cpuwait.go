package lag

import "time"

// CPUWait measures, over a span, how long this process's threads were ready to run but
// waited for a core: the kernel's per-thread run-queue delay (schedstat), plus this
// process's share of the time the hypervisor ran other guests on the machine's virtual
// CPUs (steal, shared out by the CPU each used). It is the computing a timer does not see:
// a TLS handshake, an accept loop or a parser that took longer because a core was busy
// elsewhere. It counts the threads of this process only: a real client or server in a
// process of its own is not in it, and neither are this process's threads that ended during
// the span. A thread waits behind this process's other threads too, so parallel runs in one
// process add to each other's figure; the judge compares it with the figure of the run a
// check was calibrated on (README "Runs that know when they are wrong").
type CPUWait struct {
	at  threadWaits
	sys sysCPU
	ok  bool
}

// threadWaits is each thread's cumulative run-queue delay, by thread id.
type threadWaits map[int]time.Duration

// sysCPU is the machine's busy and stolen CPU time and this process's CPU time.
type sysCPU struct {
	busy, steal, self time.Duration
}

// StartCPUWait begins a span; where the system does not say, the span reports nothing.
func StartCPUWait() CPUWait {
	at, ok1 := readThreadWaits()
	sys, ok2 := readSysCPU()
	return CPUWait{at: at, sys: sys, ok: ok1 && ok2}
}

// Wait returns how long this process's threads waited for a core since the span began,
// and false when the system does not say.
func (c CPUWait) Wait() (time.Duration, bool) {
	if !c.ok {
		return 0, false
	}
	own, neighbours, ok := c.Split()
	return own + neighbours, ok
}

// Split returns the span's wait (Wait) divided by whose work the threads queued behind.
// neighbours is what the machine's other processes made them wait: the threads' run-queue
// delay times the share of the machine's busy CPU over the span that was not this
// process's (a thread waits behind whoever holds the cores, in proportion to the CPU each
// used), plus the process's share of steal (other guests' by definition). own is the rest:
// the process's threads queueing behind each other, which a run has when it is alone too
// (every run in this process counts as its own: kalab's parallel runs share its threads).
// false when the system does not say.
func (c CPUWait) Split() (own, neighbours time.Duration, ok bool) {
	if !c.ok {
		return 0, 0, false
	}
	now, ok1 := readThreadWaits()
	sys, ok2 := readSysCPU()
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	own, neighbours = split(waited(c.at, now), c.sys, sys)
	return own, neighbours + stolen(c.sys, sys), true
}

// split divides a run-queue delay between this process and the others by their shares of
// the machine's busy CPU between from and to.
func split(delay time.Duration, from, to sysCPU) (own, others time.Duration) {
	busy, self := to.busy-from.busy, to.self-from.self
	if busy <= 0 || self >= busy {
		return delay, 0
	}
	others = time.Duration(float64(delay) * float64(busy-max(self, 0)) / float64(busy))
	return delay - others, others
}

// waited sums each thread's delay over the span: a thread seen at both ends adds its
// growth, a thread born in the span all of its delay; a thread gone at the end adds
// nothing (what it waited is no longer readable).
func waited(from, to threadWaits) time.Duration {
	var sum time.Duration
	for tid, d := range to {
		sum += max(d-from[tid], 0)
	}
	return sum
}

// stolen is this process's share of the machine's steal over the span, in proportion to
// the CPU it used of all the CPU the machine used.
func stolen(from, to sysCPU) time.Duration {
	steal, busy, self := to.steal-from.steal, to.busy-from.busy, to.self-from.self
	if steal <= 0 || busy <= 0 || self <= 0 {
		return 0
	}
	return time.Duration(float64(steal) * min(float64(self)/float64(busy), 1))
}
