//go:build !unix

package main

import "os"

const (
	envRunID     = "KALAB_SUPERVISED_RUN_ID"
	envStderrTTY = "KALAB_STDERR_TTY"
	envNoSuper   = "KALAB_NO_SUPERVISOR"
	envTestFault = "KALAB_TEST_FAULT"
)

// supervise is not available here: the plan runs in the first process.
func supervise([]string, *os.File) (int, bool) { return 0, false }

func supervisedRunID() string { return os.Getenv(envRunID) }

func injectFault(kind string) {
	if kind == "panic" {
		panic("forced by " + envTestFault + "=panic")
	}
}
