//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// guardPipe: no process groups and no guard outside Unix.
func guardPipe() (r, w *os.File, err error) { return nil, nil, nil }

func wrap(*exec.Cmd, *os.File, *os.File) {}

// startCleaner: without a guard there is nothing to clean after kalab's death.
func startCleaner(string, *os.File) (*os.File, error) { return nil, nil }

// terminate has no polite signal outside Unix: the program is killed.
func terminate(p *os.Process) { _ = p.Kill() }

func kill(p *os.Process) { _ = p.Kill() }
