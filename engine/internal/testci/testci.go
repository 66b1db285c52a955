// Package testci decides what a test does when it cannot judge what it guards here: a
// program it compares with is not installed, or the machine is too busy to hold the
// timing it checks. On a developer's machine it skips, saying why; under CI=true it fails,
// so that a CI build never goes green on a check that did not run (.ci/run fails on any
// skip not listed in .ci/allowed-skips).
package testci

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run in CI (CI=true, as GitHub Actions and .ci/run set it).
func CI() bool { return os.Getenv("CI") == "true" }

// Race reports whether the test binary runs under the race detector, where every goroutine
// is slowed several times and a check of real time has no verdict.
func Race() bool { return raceOn }

// SkipOrFail skips tb with the message, or fails it under CI=true. Under the race
// detector it always skips: the detector slows every goroutine several times, so a timing
// check cannot be judged there, and CI judges each such test in its plain test pass (where
// a skip fails), running the race pass for data races only.
func SkipOrFail(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() && !raceOn {
		tb.Fatalf("%s (CI=true: a check that cannot be judged here fails instead of skipping)", msg)
	}
	tb.Skip(msg)
}

// TimingMiss reports a real-time measurement that missed its bound. In the plain test pass
// it is an error like any other; under the race detector, which slows every goroutine
// several times, it is a check that cannot be judged there, and says so (SkipOrFail skips
// it there; the plain pass judges it), instead of failing the race step with a bare number.
// Call it from the test's own goroutine.
func TimingMiss(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if raceOn {
		SkipOrFail(tb, "a timing bound missed under the race detector: "+format, args...)
		return
	}
	tb.Errorf(format, args...)
}
