//go:build race

package server

// raceEnabled: the race detector slows every goroutine hand-off, so wake-up figures
// measure the instrumentation as much as the clock.
const raceEnabled = true
