// Package gcfloor raises the smallest heap Go's garbage collector lets a process grow to
// before it collects, without a ceiling on the largest.
//
// A run on the virtual clock is pure CPU, and with the few tens of megabytes a suite's
// runs hold live, Go's default (collect each time the heap doubles) collected every few
// megabytes allocated: a seventh of the CPU of the bundled virtual runs went to the
// collector. GOGC=400 would cut that, but it multiplies a large run's heap as well (a burst
// of 100,000 connections already peaks at 7.6 GB), and a memory limit to bound it makes the
// collector run without pause once the live heap nears the limit. A floor does neither:
// the collector paces on the live heap plus an allocation that is never touched, so a small
// heap is collected a few times less often, and a heap of gigabytes paces as before, within
// twice the floor.
//
// The floor's bytes are never written, so the kernel backs them with no memory: they add to
// the process's virtual size, not to its resident set.
package gcfloor

import (
	"os"
	"runtime"
)

// Size is the floor: the heap a process with little live grows to before it collects is
// about twice this.
const Size = 64 << 20

// Hold raises the floor until release is called; with GOGC or GOMEMLIMIT set in the
// environment it does nothing, since the user chose how the collector paces.
func Hold() (release func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	floor := make([]byte, Size)
	return func() { runtime.KeepAlive(floor) }
}
