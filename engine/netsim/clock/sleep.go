package clock

import "time"

// sleepSpin is how long before an instant a Sleeper stops trusting Go timers. With a
// timerfd the clock blocks on the kernel timer until spinTail before the instant; without
// one it sleeps on a Go timer until this window opens and yields from there.
const sleepSpin = 2 * time.Millisecond

// Sleeper waits for instants on the process-wide precise clock that delays the link's
// chunks, for timers other than the link's that carry the model: a load schedule's pauses
// and arrivals. A Go timer on Linux fires up to about a millisecond late when the process is
// otherwise idle, because the runtime's netpoller waits in whole milliseconds
// (runtime/netpoll_epoll.go rounds any wait under 1 ms up to 1 ms and longer ones down to
// whole ms); at a time scale of 0.02 a millisecond is 50 ms of scenario time. A Sleeper is
// reused by one goroutine at a time; it allocates only on its first wait.
type Sleeper struct{ w Waiter }

// Until waits until at, or returns false as soon as done closes (also when both happened).
func (s *Sleeper) Until(at time.Time, done <-chan struct{}) bool {
	return precise().Wait(&s.w, at, sleepSpin, done)
}

// Sleep waits on the precise clock until at, or returns false as soon as done closes, with
// a waiter of its own: for callers that wait from many goroutines at once (a server's idle
// closes), where one Sleeper cannot be shared.
func Sleep(at time.Time, done <-chan struct{}) bool {
	var s Sleeper
	return s.Until(at, done)
}

// TimerSleep waits on a Go timer until at, or returns false once done closes: the sleep of
// the virtual clock, where a timer fires exactly on its instant (and the precise clock's
// spin would never end).
func TimerSleep(at time.Time, done <-chan struct{}) bool {
	d := time.Until(at)
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
