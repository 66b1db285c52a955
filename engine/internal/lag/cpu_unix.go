//go:build unix

package lag

import (
	"syscall"
	"time"
)

// ProcessCPU returns the user plus system CPU time this process has used, from
// getrusage, or 0 if that fails (it cannot for RUSAGE_SELF with a valid pointer).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
