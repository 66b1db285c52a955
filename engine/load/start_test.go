package load

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestStartRunsEveryCall: with Spec.Start every call goes through it, once, in seq order
// when Start runs them one at a time.
func TestStartRunsEveryCall(t *testing.T) {
	var order []int
	s := Spec{Requests: 20, Concurrency: 5, Burst: 10, Start: func(call func()) { call() }}
	if err := Run(context.Background(), s, func(_ context.Context, seq int) { order = append(order, seq) }); err != nil {
		t.Fatal(err)
	}
	for i, seq := range order {
		if seq != i {
			t.Fatalf("calls ran in the order %v, want 0..19", order)
		}
	}
	if len(order) != 20 {
		t.Fatalf("%d calls, want 20", len(order))
	}
}

// TestStartAfterCancelStartsNothing: a call that Start runs only after the context ended
// never reaches the request function, and frees its slot.
func TestStartAfterCancelStartsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan func(), 3)
	var did atomic.Int64
	s := Spec{Requests: 3, Concurrency: 3, Start: func(call func()) { held <- call }}
	done := make(chan error)
	go func() { done <- Run(ctx, s, func(context.Context, int) { did.Add(1) }) }()
	calls := []func(){<-held, <-held, <-held}
	cancel()
	for _, c := range calls {
		c()
	}
	if err := <-done; !errors.Is(err, context.Canceled) || did.Load() != 0 {
		t.Errorf("Run: %v with %d calls made; want context.Canceled and none", err, did.Load())
	}
}
