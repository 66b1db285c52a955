//go:build unix

package startcheck

import (
	"strconv"
	"syscall"
)

// Check raises the soft descriptor limit to what starting needs and says why even the hard
// limit leaves fewer than Files free; "" when it does not. It opens no file.
func Check() string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= checkedBelow {
		return "" // a limit that cannot be read is left to the runs' budget
	}
	open := openBelow(int(lim.Cur))
	need := uint64(open + Files)
	if lim.Cur < need {
		raise(lim, need)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if lim.Cur < need {
		return "cannot start: the file descriptor limit (ulimit -n) is " + strconv.FormatUint(lim.Cur, 10) +
			" and " + strconv.Itoa(open) + " are already open; kalab needs " + strconv.Itoa(Files) +
			" free to start: raise it (ulimit -n 1024, or LimitNOFILE= for a service)"
	}
	return ""
}

// raise lifts the soft limit toward need: the hard limit too where allowed (root, up to
// fs.nr_open), else the soft one as far as the hard one lets it.
func raise(lim syscall.Rlimit, need uint64) {
	if need > lim.Max {
		both := lim
		both.Max, both.Cur = need, need
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &both) == nil {
			return
		}
	}
	if target := min(need, lim.Max); target > lim.Cur {
		soft := lim
		soft.Cur = target
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &soft)
	}
}

// openBelow counts the descriptors open below n with fstat alone, which opens nothing.
func openBelow(n int) int {
	var st syscall.Stat_t
	open := 0
	for fd := range n {
		if syscall.Fstat(fd, &st) == nil {
			open++
		}
	}
	return open
}
