package vnet

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestOrderSettlesEachStep: steps due at one instant run in the order At was called, and
// what each sets off (a goroutine that hands its work to another) has finished before the
// next starts, over 50 rounds; at GOMAXPROCS 1 and 4.
func TestOrderSettlesEachStep(t *testing.T) {
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		synctest.Test(t, func(t *testing.T) {
			n := New()
			n.Order(synctest.Wait)
			defer n.Close()
			var mu sync.Mutex
			var got, want []int
			note := func(i int) { mu.Lock(); got = append(got, i); mu.Unlock() }
			for round := range 50 {
				due := time.Now().Add(time.Millisecond)
				for i := range 4 {
					id := 4*round + i
					want = append(want, id, id)
					n.At(due, func() {
						go func() {
							note(id)
							ch := make(chan struct{})
							go func() { runtime.Gosched(); note(id); close(ch) }()
							<-ch
						}()
					})
				}
				if !n.Sleep(due.Add(time.Millisecond), nil) {
					t.Fatal("Sleep returned false")
				}
			}
			synctest.Wait()
			if !slices.Equal(got, want) {
				t.Errorf("GOMAXPROCS %d: steps ran as %v, want %v", procs, got[:16], want[:16])
			}
		})
		runtime.GOMAXPROCS(prev)
	}
}

// TestStepStop: a stopped step never runs, and a step timer's Reset moves it.
func TestStepStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		n.Order(synctest.Wait)
		defer n.Close()
		ran := 0
		s := n.At(time.Now().Add(time.Second), func() { ran++ })
		if !s.Stop() || s.Stop() {
			t.Error("Stop: want true, then false")
		}
		fired := make(chan time.Time, 1)
		tm := n.afterFunc(time.Second, func() { fired <- time.Now() })
		start := time.Now()
		tm.Reset(3 * time.Second)
		at := <-fired
		time.Sleep(5 * time.Second)
		if ran != 0 || at.Sub(start) != 3*time.Second || len(fired) != 0 {
			t.Errorf("stopped step ran %d times; reset timer fired after %v, want 3s, and %d times more", ran, at.Sub(start), len(fired))
		}
	})
}
