package realserver

import "syscall"

// procAttr puts the server in its own process group, so that stopping it stops its workers
// and children too. Pdeathsig: if kalab dies without its deferred Close (SIGKILL), the
// server is told to stop instead of holding its port; SIGTERM, so nginx's master takes its
// workers with it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
