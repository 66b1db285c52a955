//go:build !unix

package realserver

import (
	"os"
	"syscall"
)

// procAttr has no process group to ask for outside Unix.
func procAttr() *syscall.SysProcAttr { return nil }

// terminate has no polite signal outside Unix: the server is killed.
func terminate(p *os.Process) { _ = p.Kill() }

// kill stops the server at once.
func kill(p *os.Process) { _ = p.Kill() }
