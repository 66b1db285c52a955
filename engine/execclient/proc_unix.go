//go:build unix

package execclient

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS reads the program's peak resident set from its rusage (kilobytes on Linux,
// bytes on Darwin).
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) << 10
}
