// Command kalab runs declarative HTTP connection-reuse scenarios and checks their results.
package main

import (
	"os"

	"github.com/kalab-dev/kalab/engine/runner"
)

// clockHost runs runs on the virtual clock; nil where the process has none (the command's
// own tests call Main in their test process), which puts every run on the real clock.
var clockHost *runner.Host

// main runs the command inside the harness that gives it a virtual clock: Go's
// testing/synctest, reached through testing.Main, which is why every command runs as the
// harness's one test.
func main() {
	runner.HostMain(func(h *runner.Host) int {
		clockHost = h
		return entry(os.Args[1:])
	})
}

// entry is the process's main: `kalab run` is supervised, every other command runs here.
func entry(args []string) int {
	if len(args) > 0 && args[0] == "run" && os.Getenv(envRunID) == "" && os.Getenv(envNoSuper) == "" {
		if code, ok := supervise(args[1:], os.Stderr); ok {
			return code
		}
	}
	return Main(args, os.Stdout, os.Stderr)
}
