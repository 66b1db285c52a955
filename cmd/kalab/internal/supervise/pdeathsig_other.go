//go:build !linux

package supervise

import "os/exec"

func setPdeathsig(*exec.Cmd) {}
