// Package vclock runs functions on a virtual clock: each run executes inside a
// testing/synctest bubble, where time advances only when every goroutine of the
// bubble is durably blocked, so a model run is exact and takes no real time
// for its waits.
//
// Go offers bubbles only through synctest.Test, which needs a *testing.T and
// must be called from that test's own goroutine. Package vclock therefore
// has two kinds of Host:
//
//   - FromTest wraps the *testing.T of a running test (go test). Each Run is a
//     subtest of that test whose body calls synctest.Test, so Run works from
//     any goroutine.
//   - Main builds the same arrangement in an ordinary program: it starts the
//     testing harness with testing.Main and a single test whose body runs the
//     program's main function on a Host. testing.Main parses -test flags,
//     prints PASS/FAIL and calls os.Exit, so Main never returns and exits from
//     inside the test with main's code. That makes it a fit for a child
//     process the kalab binary starts of itself, not for a long-lived process
//     that does other work. The other entry into bubbles,
//     internal/synctest.Run by go:linkname, is refused by the linker unless
//     built with -checklinkname=0, which go install users never get, so the
//     package does not use it.
//
// A bubble whose goroutines block outside the model (a real socket, a system
// call, a sync.Mutex held elsewhere, a spinning loop) stops the virtual clock:
// the run hangs instead of failing. Run therefore keeps a real-time watchdog
// outside the bubble. It watches a progress counter the model increments
// (Progress) and gives up after StallAfter of real time without progress,
// or after a total real-time Limit, with a *StallError that names the
// goroutines of the bubble that were not durably blocked. It reads them from
// runtime.Stack: the runtime marks each goroutine of a bubble with
// "synctest bubble N" in its header and durably blocked ones with "(durable)".
// That text is meant for people, so the list is a diagnostic; detection
// itself depends only on the progress counter and real time.
//
// When every goroutine of a bubble is durably blocked and no timer is pending,
// or the run's function returned while goroutines it started are still
// blocked, synctest panics on the goroutine that started the bubble. Run
// recovers that panic and returns it as an error naming the blocked
// goroutines. A panic in the run's function is recovered as well; a panic in a
// goroutine the function started cannot be recovered and ends the process.
package vclock
