package clock

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestFireAtNeverEarly checks the coalescing rule on many dues and quanta: a chunk is
// released at the end of its quantum, never before its due time and less than one quantum
// after it, and chunks due within the same quantum share the same instant (one wake-up).
func TestFireAtNeverEarly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		q := time.Duration(1 + r.IntN(int(50*time.Microsecond)))
		due := epoch.Add(time.Duration(r.Int64N(int64(10*time.Second))) - 5*time.Second)
		got := FireAt(due, q)
		if got.Before(due) {
			t.Fatalf("FireAt(%v after the epoch, q %v) is %v early", due.Sub(epoch), q, due.Sub(got))
		}
		if late := got.Sub(due); late >= q {
			t.Fatalf("FireAt(%v after the epoch, q %v) is %v late, want < q", due.Sub(epoch), q, late)
		}
		if off := got.Sub(epoch) % q; off != 0 {
			t.Fatalf("FireAt(%v after the epoch, q %v) is off the grid by %v", due.Sub(epoch), q, off)
		}
		// Another due in the same quantum fires at the same instant.
		start := got.Add(-q + 1)
		other := start.Add(time.Duration(r.Int64N(int64(q))))
		if o := FireAt(other, q); !o.Equal(got) {
			t.Fatalf("dues %v and %v in one quantum %v fire at %v and %v", due.Sub(epoch), other.Sub(epoch), q, got.Sub(epoch), o.Sub(epoch))
		}
	}
	if d := epoch.Add(time.Hour); !FireAt(d, 0).Equal(d) {
		t.Error("a zero quantum must not move the due time")
	}
	for _, c := range []struct{ rtt, want time.Duration }{
		{0, 0}, {time.Millisecond, 20 * time.Microsecond}, {500 * time.Microsecond, 10 * time.Microsecond},
		{50 * time.Millisecond, MaxQuantum}, {150 * time.Millisecond, MaxQuantum},
	} {
		if got := Quantum(c.rtt); got != c.want {
			t.Errorf("Quantum(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}
