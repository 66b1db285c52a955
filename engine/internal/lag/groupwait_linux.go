package lag

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// readGroup reads, for every process of the process group pgid, each thread's run-queue
// delay (/proc/<pid>/task/<tid>/schedstat) and the processes' CPU time (utime and stime of
// /proc/<pid>/stat, in USER_HZ ticks); false when no process of the group is found.
func readGroup(pgid int) (threadWaits, time.Duration, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, 0, false
	}
	waits, cpu, found := threadWaits{}, time.Duration(0), false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // the process ended between the listing and the read
		}
		grp, ticks, ok := parseGroupStat(b)
		if !ok || grp != pgid {
			continue
		}
		found = true
		cpu += time.Duration(ticks) * (time.Second / userHZ)
		addTaskWaits(pid, waits)
	}
	return waits, cpu, found
}

// addTaskWaits adds each thread of pid's run-queue delay to waits.
func addTaskWaits(pid int, waits threadWaits) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(dir + t.Name() + "/schedstat"); err == nil {
			if d, ok := parseSchedstat(b); ok {
				waits[tid] = d
			}
		}
	}
}

// parseGroupStat reads a /proc/<pid>/stat line's process group and its user plus system
// CPU time in ticks: the fields after the command's closing parenthesis are state, ppid,
// pgrp, session, tty_nr, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime
// (man 5 proc).
func parseGroupStat(b []byte) (pgrp int, ticks int64, ok bool) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 13 {
		return 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	ut, err2 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err3 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || ut < 0 || st < 0 {
		return 0, 0, false
	}
	return pgrp, ut + st, true
}
