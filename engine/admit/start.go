package admit

import (
	"fmt"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

// StartFiles is how many file descriptors kalab needs free to start at all: the Go
// runtime's poller (two, made at the first file opened), the pipe between `kalab run` and
// the child process that runs the plan, the results file, a listener and a connection.
// Below it the runtime itself can die at the first file kalab opens, with a trace and Go's
// exit 2, which would read as invalid input. A run that needs more than is left is not
// started (FileBudget).
const StartFiles = 8

// startCheckedBelow bounds the check: a limit this high leaves room to start whatever is
// open, and counting every descriptor below a limit of millions would take a while.
const startCheckedBelow = 4096

// StartError says kalab cannot start on this machine as it is set up: nothing ran, and there
// is no verdict (exit 3).
type StartError struct {
	Limit, Open int
}

func (e *StartError) Error() string {
	return fmt.Sprintf("cannot start: the file descriptor limit (ulimit -n) is %d and %d are already open; "+
		"kalab needs %d free to start: raise it (ulimit -n 1024, or LimitNOFILE= for a service)", e.Limit, e.Open, StartFiles)
}

// CheckStart raises the soft descriptor limit to what starting needs and fails when even the
// hard limit leaves fewer than StartFiles free. It opens no file, so it can run first thing
// in the process, before the runtime's poller exists. Run budgets are FileBudget's.
func CheckStart() error {
	cur, err := kernel.FileLimit()
	if err != nil || cur >= startCheckedBelow {
		return nil // a limit that cannot be read is left to the runs' budget
	}
	open := kernel.OpenBelow(int(cur))
	_ = kernel.RaiseFileLimit(uint64(open + StartFiles))
	if cur, err = kernel.FileLimit(); err == nil && int(cur) < open+StartFiles {
		return &StartError{Limit: int(cur), Open: open}
	}
	return nil
}
