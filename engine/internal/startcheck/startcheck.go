// Package startcheck refuses to start a process that has too few file descriptors left,
// before any package's initialization can need one. The Go runtime makes its poller's two
// descriptors at the first timer or file; quic-go's initialization draws a random seed,
// and the first draw starts a timer (crypto/internal/sysrand). Without descriptors for the
// poller the runtime dies there with its own exit 2 and a trace, which would read as
// invalid input. This package imports only what every such package imports first, and its
// import path sorts before theirs, so (Go's initialization order: the first ready package
// by import path) its init runs before theirs.
package startcheck

import "syscall"

// Files is how many file descriptors kalab needs free to start at all: the Go runtime's
// poller (two), the pipe between `kalab run` and the child process that runs the plan,
// the results file, a listener and a connection.
const Files = 8

// checkedBelow bounds the check: a limit this high leaves room to start whatever is open,
// and counting every descriptor below a limit of millions would take a while.
const checkedBelow = 4096

// exitNoVerdict is kalab's exit code for "could not run: no verdict".
const exitNoVerdict = 3

func init() {
	if msg := Check(); msg != "" {
		// A plain system call: os.Stderr could need the poller.
		_, _ = syscall.Write(2, []byte("kalab: "+msg+"\n"))
		syscall.Exit(exitNoVerdict)
	}
}
