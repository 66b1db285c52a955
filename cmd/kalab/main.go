// Command kalab runs declarative HTTP connection-reuse scenarios and checks their results.
package main

import (
	"io"
	"os"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/supervise"
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
	if len(args) > 0 && args[0] == "run" && supervise.Wanted() {
		// The output directory, to close the results of a child that died; bad flags are
		// the child's to report.
		out := "results"
		if f, _, ok := parseRunFlags(args[1:], io.Discard, io.Discard); ok {
			out = f.out
		}
		if code, ok := supervise.Run(args[1:], out, os.Stderr); ok {
			return code
		}
	}
	return Main(args, os.Stdout, os.Stderr)
}
