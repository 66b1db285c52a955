package realserver

import "syscall"

// procAttrOS adds Pdeathsig: if kalab dies without its deferred Close (SIGKILL), the server
// is told to stop instead of holding its port; SIGTERM, so nginx's master takes its
// workers with it.
func procAttrOS(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
