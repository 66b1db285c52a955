//go:build !unix

package kernel

// noFileLimit stands for "no per-process descriptor limit": Windows has no
// RLIMIT_NOFILE, sockets are bounded by memory instead.
const noFileLimit = 1 << 24

// RaiseFileLimit does nothing where there is no RLIMIT_NOFILE.
func RaiseFileLimit(need uint64) error { return nil }

// FileLimit reports a limit no plan reaches where there is no RLIMIT_NOFILE.
func FileLimit() (uint64, error) { return noFileLimit, nil }
