//go:build unix && !linux

package realserver

import "syscall"

// procAttrOS adds nothing where there is no parent-death signal.
func procAttrOS(*syscall.SysProcAttr) {}
