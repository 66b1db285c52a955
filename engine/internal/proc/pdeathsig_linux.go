package proc

import "syscall"

// setPdeathsig kills the leader when the thread that forked it ends (Start keeps that
// thread alive as long as the program may run), that is when kalab dies.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
