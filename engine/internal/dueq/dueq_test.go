package dueq

import (
	"testing"
	"time"
)

// Values come out by due time, and among those due at the same instant in push order;
// one not yet due says how long until it is.
func TestOrder(t *testing.T) {
	var q Queue[string]
	now := time.Now()
	past := now.Add(-time.Hour)
	if !q.Push(past.Add(2*time.Second), "c") {
		t.Error("the first value pushed is not the earliest")
	}
	q.Push(past.Add(time.Second), "a")
	if q.Push(past.Add(time.Second), "b") {
		t.Error("b, pushed after a at the same instant, reported as the earliest")
	}
	q.Push(past.Add(2*time.Second), "d")
	q.Push(now.Add(time.Hour), "later")
	var got string
	for {
		v, ok, wait := q.Next()
		if !ok {
			if wait < 59*time.Minute || wait > time.Hour {
				t.Errorf("the value not yet due: wait %v, want about an hour", wait)
			}
			break
		}
		got += v
	}
	if got != "abcd" || q.Len() != 1 {
		t.Errorf("order %q with %d left; want abcd with 1", got, q.Len())
	}
	q.Clear()
	if _, ok, wait := q.Next(); ok || wait >= 0 {
		t.Errorf("an empty queue: ok %v, wait %v; want none", ok, wait)
	}
}

// A thousand values pushed in reverse, many at one instant, come out in (due, push) order.
func TestHeapUnderLoad(t *testing.T) {
	var q Queue[int]
	base := time.Now().Add(-time.Hour)
	for i := 999; i >= 0; i-- {
		q.Push(base.Add(time.Duration(i/10)*time.Millisecond), i)
	}
	prev := -1
	for n := 0; ; n++ {
		v, ok, _ := q.Next()
		if !ok {
			if n != 1000 {
				t.Fatalf("%d values out of 1000", n)
			}
			break
		}
		// within one instant (i/10 equal) the later push is the smaller i
		if prev >= 0 && (v/10 < prev/10 || (v/10 == prev/10 && v > prev)) {
			t.Fatalf("%d after %d", v, prev)
		}
		prev = v
	}
}
