// Command kalab runs declarative HTTP connection-reuse scenarios and checks their results.
package main

import "os"

func main() { os.Exit(entry(os.Args[1:])) }

// entry is the process's main: `kalab run` is supervised, every other command runs here.
func entry(args []string) int {
	if len(args) > 0 && args[0] == "run" && os.Getenv(envRunID) == "" && os.Getenv(envNoSuper) == "" {
		if code, ok := supervise(args[1:], os.Stderr); ok {
			return code
		}
	}
	return Main(args, os.Stdout, os.Stderr)
}
