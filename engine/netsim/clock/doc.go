// Package clock is the process-wide precise clock that releases the links' delayed chunks on
// their instant (Clock, Waiter), the grid that coalesces nearby deadlines (FireAt, Quantum), and the
// Sleeper the run's own timers use on the real clock.
package clock
