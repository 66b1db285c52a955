package lag

import (
	"testing"
	"time"
)

func TestWaitedCountsEachThreadOnce(t *testing.T) {
	from := threadWaits{1: 10, 2: 20, 3: 30}
	to := threadWaits{1: 15, 2: 20, 4: 7} // 3 ended, 4 was born
	if got := waited(from, to); got != 5+0+7 {
		t.Errorf("waited = %v; want 12ns (thread 1 +5, thread 4 born with 7, thread 3 gone)", got)
	}
}

func TestStolenIsTheProcessShare(t *testing.T) {
	from := sysCPU{busy: 0, steal: 0, self: 0}
	to := sysCPU{busy: 4 * time.Second, steal: 400 * time.Millisecond, self: time.Second}
	if got := stolen(from, to); got != 100*time.Millisecond {
		t.Errorf("stolen = %v; want 100ms (a quarter of the machine's CPU, a quarter of its steal)", got)
	}
	if got := stolen(to, to); got != 0 {
		t.Errorf("stolen over nothing = %v", got)
	}
}

func TestSplitByShareOfTheMachinesCPU(t *testing.T) {
	from := sysCPU{busy: time.Second, self: 100 * time.Millisecond}
	to := sysCPU{busy: 5 * time.Second, self: 1100 * time.Millisecond} // 4 s busy, 1 s of it ours
	own, others := split(80*time.Millisecond, from, to)
	if own != 20*time.Millisecond || others != 60*time.Millisecond {
		t.Errorf("split = own %v, others %v; want 20ms and 60ms (the others held 3 of the 4 busy seconds)", own, others)
	}
	// Tick granularity can make the process's CPU exceed the machine's busy figure: all own.
	if own, others := split(80*time.Millisecond, from, sysCPU{busy: 1500 * time.Millisecond, self: 700 * time.Millisecond}); own != 80*time.Millisecond || others != 0 {
		t.Errorf("split with the process over the machine = own %v, others %v; want all own", own, others)
	}
}
