//go:build !linux

package realserver

import "syscall"

// procAttr puts the server in its own process group, so that stopping it stops its workers
// and children too.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
