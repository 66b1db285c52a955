// Package testci decides what a test does when it cannot judge what it guards here: a
// program it compares with is not installed, or the machine is too busy to hold the
// timing it checks. On a developer's machine it skips, saying why; under CI=true it fails,
// so that a CI build never goes green on a check that did not run (.ci/run fails on any
// skip not listed in .ci/allowed-skips).
//
// A test kit: the engine's tests and the command line's both use it; it is kalab's own, not
// a stable API for other modules.
package testci

import (
	"fmt"
	"os"
	"os/exec"
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

// programs names, for each program a test looks up, how to install it: the Debian package
// (.ci/preamble installs those CI needs), or, for Node, where it comes from.
var programs = map[string]string{
	"bash":     "Debian package bash",
	"chromium": "Debian package chromium",
	"curl":     "Debian package curl",
	"go":       "the Go toolchain named in go.mod",
	"haproxy":  "Debian package haproxy",
	"nginx":    "Debian package nginx",
	"node":     "Node 20 or later from nodejs.org; Debian bookworm's nodejs is 18",
	"promtool": "Debian package prometheus",
	"ps":       "Debian package procps",
	"python3":  "Debian package python3",
	"sh":       "Debian package dash",
	"setsid":   "Debian package util-linux",
	"xmllint":  "Debian package libxml2-utils",
	"yes":      "Debian package coreutils",
}

// Program returns the path of the program name, or SkipOrFails tb saying how to install
// it when it is not installed. also lists other places or names it may have, tried after
// name (Debian's servers live in /usr/sbin, off a user's PATH; Chromium has other names).
func Program(tb testing.TB, name string, also ...string) string {
	tb.Helper()
	how, ok := programs[name]
	if !ok {
		tb.Fatalf("testci: no way to install %s is known; add it to testci.programs", name)
	}
	for _, p := range append([]string{name}, also...) {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	Missing(tb, name, how)
	return ""
}

// Missing stops a test that needs what is not installed here, saying how to install it:
// it skips, or fails under CI=true, where every program a test needs is installed.
func Missing(tb testing.TB, what, how string) {
	tb.Helper()
	SkipOrFail(tb, "%s is not installed (%s): this test needs it", what, how)
}

// Installing says how to install a program a test looks up (programs).
func Installing(name string) string { return programs[name] }
