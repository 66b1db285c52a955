package supervise

import (
	"os/exec"
	"syscall"
)

// setPdeathsig kills the child when the supervising parent dies, so a kill -9 of kalab does
// not leave a plan running with nobody to report it.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
