//go:build unix

package realserver

import (
	"os"
	"syscall"
)

// procAttr puts the server in its own process group, so that stopping it stops its workers
// and children too (on Linux it also asks for SIGTERM when kalab dies: procAttrOS).
func procAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	procAttrOS(a)
	return a
}

// terminate asks the server's process group to stop.
func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill stops the server's process group at once.
func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
