// Package clock is the process-wide precise clock that releases the links' delayed chunks on
// their instant (Precise, Waiter), the grid that coalesces nearby deadlines, and the
// Sleeper the run's own timers use on the real clock.
package clock
