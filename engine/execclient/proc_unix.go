//go:build unix

package execclient

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// ownGroup starts the program in its own process group and kills the whole group when
// the run ends early, so that a shell adapter's curl children do not outlive it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

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
