package admit

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestRerunsRunBesideEachOtherOnly: a rerun waits while a first attempt holds anything,
// reruns then share the budget, and a first attempt waits while any rerun holds anything;
// a run alone (AcquireAll) waits for the reruns too.
func TestRerunsRunBesideEachOtherOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b := NewBudget(100)
		first := b.Acquire(ctx, 10)
		reruns := make(chan int, 2)
		for range 2 {
			go func() { reruns <- b.AcquireRerun(ctx, 30) }()
		}
		synctest.Wait()
		if len(reruns) != 0 {
			t.Fatal("a rerun started beside a first attempt")
		}
		b.Release(first)
		synctest.Wait()
		if len(reruns) != 2 {
			t.Fatalf("%d of 2 reruns started once no first attempt held anything; want both, beside each other", len(reruns))
		}
		firsts := make(chan int, 1)
		go func() { firsts <- b.Acquire(ctx, 10) }()
		alone := make(chan int, 1)
		go func() { alone <- b.AcquireAll(ctx) }()
		synctest.Wait()
		if len(firsts) != 0 || len(alone) != 0 {
			t.Fatalf("beside the reruns: %d first attempts and %d runs alone started; want none", len(firsts), len(alone))
		}
		b.Release(<-reruns)
		synctest.Wait()
		if len(firsts) != 0 {
			t.Fatal("a first attempt started while a rerun still held its units")
		}
		b.Release(<-reruns)
		synctest.Wait()
		// Both waited for the reruns; one of them has the budget now, the other waits for it.
		switch got := len(firsts) + len(alone); {
		case got != 1:
			t.Fatalf("after the reruns, %d of the first attempt and the run alone started; want 1", got)
		case len(firsts) == 1:
			b.Release(<-firsts)
		default:
			b.Release(<-alone)
		}
		synctest.Wait()
		if len(firsts)+len(alone) != 1 {
			t.Fatal("the other waiter did not start once the budget was free")
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if n := b.AcquireRerun(cctx, 1); n != 0 {
			t.Fatalf("AcquireRerun after cancel = %d; want 0", n)
		}
	})
}
