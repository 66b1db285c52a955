//go:build !unix

package supervise

import "os"

const (
	envRunID     = "KALAB_SUPERVISED_RUN_ID"
	envStderrTTY = "KALAB_STDERR_TTY"
	envNoSuper   = "KALAB_NO_SUPERVISOR"
	envTestFault = "KALAB_TEST_FAULT"
)

// Run is not available here: the plan runs in the first process.
func Run([]string, string, *os.File) (int, bool) { return 0, false }

// RunID is the run id the supervising parent chose, or "" when not supervised.
func RunID() string { return os.Getenv(envRunID) }

func injectFault(kind string) {
	if kind == "panic" {
		panic("forced by " + envTestFault + "=panic")
	}
}
