//go:build !linux

package lag

import "time"

// Off Linux there is no per-thread run-queue delay to read: a span reports nothing.
func readThreadWaits() (threadWaits, bool)             { return nil, false }
func readThreads() (map[int]threadSched, bool)         { return nil, false }
func readSysCPU() (sysCPU, bool)                       { return sysCPU{}, false }
func readGroup(int) (threadWaits, time.Duration, bool) { return nil, 0, false }
