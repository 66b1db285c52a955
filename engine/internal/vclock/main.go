package vclock

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"testing"
)

// Main runs main on a Host inside a testing.Main harness in this process and
// exits with main's code; it never returns. It is meant for a child process
// of the kalab binary.
//
// Call it after the program has parsed its own arguments. Main leaves
// os.Args alone and marks flag.CommandLine parsed if it is not yet, so the
// harness parses no arguments and sees only the defaults of its -test flags
// (registered on flag.CommandLine by testing.Init). The program's main runs
// on the harness's test goroutine and Main exits from there with os.Exit, so
// the harness never prints its PASS/FAIL/ok lines. A panic or runtime.Goexit
// in main is reported on stderr and exits with code 2.
func Main(main func(h *Host) int) {
	if !flag.Parsed() {
		// Parse no arguments: this only marks flag.CommandLine parsed, which
		// makes testing's M.Run skip flag.Parse.
		_ = flag.CommandLine.Parse([]string{})
	}
	testing.Main(
		func(pat, str string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "vclock", F: func(t *testing.T) {
			os.Exit(runMain(t, main))
		}}},
		nil, nil)
	// testing.Main calls os.Exit; reaching here means the harness changed.
	fmt.Fprintln(os.Stderr, "vclock: testing.Main returned")
	os.Exit(2)
}

// runMain runs main on a Host for t and returns its code, or 2 after a panic
// or runtime.Goexit in main.
func runMain(t *testing.T, main func(h *Host) int) (code int) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n\n%s", r, debug.Stack())
		} else {
			fmt.Fprintln(os.Stderr, "vclock: main called runtime.Goexit")
		}
		os.Exit(2)
	}()
	code = main(&Host{t: t})
	returned = true
	return code
}
