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
