//go:build !linux

package lag

// Off Linux there is no per-thread run-queue delay to read: a span reports nothing.
func readThreadWaits() (threadWaits, bool)     { return nil, false }
func readThreads() (map[int]threadSched, bool) { return nil, false }
func readSysCPU() (sysCPU, bool)               { return sysCPU{}, false }
