//go:build unix && !linux

package proc

import "syscall"

// setPdeathsig: no parent-death signal here; the guard's watcher alone kills the group
// when kalab dies.
func setPdeathsig(*syscall.SysProcAttr) {}
