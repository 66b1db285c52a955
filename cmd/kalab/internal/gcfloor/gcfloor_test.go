package gcfloor

import (
	"runtime"
	"testing"
)

var sink []byte

// cycles is how many collections allocating 256 MiB of short-lived garbage takes.
func cycles() uint32 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 256 {
		sink = make([]byte, 1<<20)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// TestFloorCollectsLessOften: with the floor held the same garbage takes a few times fewer
// collections than without it (the heap grows to about twice the floor instead of twice the
// little that is live); with GOGC set in the environment the floor is not held.
func TestFloorCollectsLessOften(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	without := cycles()
	release := Hold()
	with := cycles()
	release()
	if with*3 > without {
		t.Errorf("256 MiB of garbage took %d collections with the floor and %d without; want a third or fewer", with, without)
	}
	t.Setenv("GOGC", "100")
	release = Hold()
	chosen := cycles()
	release()
	if chosen*3 <= without {
		t.Errorf("with GOGC set the floor was held anyway: %d collections against %d without it", chosen, without)
	}
	t.Logf("collections for 256 MiB of garbage: %d without the floor, %d with it, %d with GOGC set", without, with, chosen)
}
