package supervise

import (
	"os"
	"sync"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Wanted reports whether kalab run should run under a supervising parent: it is not the
// supervised child itself, and KALAB_NO_SUPERVISOR does not ask to run in one process (for
// a debugger).
func Wanted() bool { return os.Getenv(envRunID) == "" && os.Getenv(envNoSuper) == "" }

// StderrTTY reports whether the supervising parent's stderr is a terminal (the child's
// own is a pipe to the parent).
func StderrTTY() bool { return os.Getenv(envStderrTTY) != "" }

// Faults returns the observer a run reports to: next, unless KALAB_TEST_FAULT asks the run
// to fail while its second run ends, after the first is recorded and before the second is.
// Only a test binary (go test's, which the command-line tests run as kalab) listens: a
// kalab built with go build ignores the variable.
func Faults(next runner.Observer) runner.Observer {
	kind := os.Getenv(envTestFault)
	if kind == "" || !testing.Testing() {
		return next
	}
	return &faultObserver{next: next, kind: kind}
}

// faultObserver fails the run as KALAB_TEST_FAULT asks.
type faultObserver struct {
	next runner.Observer // the progress bars, or nil
	kind string
	mu   sync.Mutex
	n    int
}

func (o *faultObserver) RunStarted(r *scenario.Run, total int) {
	if o.next != nil {
		o.next.RunStarted(r, total)
	}
}

func (o *faultObserver) RequestDone(r *scenario.Run, ok bool) {
	if o.next != nil {
		o.next.RequestDone(r, ok)
	}
}

func (o *faultObserver) RunEnded(r *scenario.Run, rec *report.Run) {
	o.mu.Lock()
	o.n++
	second := o.n == 2
	o.mu.Unlock()
	if second {
		injectFault(o.kind)
	}
	if o.next != nil {
		o.next.RunEnded(r, rec)
	}
}
