package netsim

import (
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
)

// TestFireAtNeverEarly checks the coalescing rule on many dues and quanta: a chunk is
// released at the end of its quantum, never before its due time and less than one quantum
// after it, and chunks due within the same quantum share the same instant (one wake-up).
func TestFireAtNeverEarly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		q := time.Duration(1 + r.IntN(int(50*time.Microsecond)))
		due := quantumEpoch.Add(time.Duration(r.Int64N(int64(10*time.Second))) - 5*time.Second)
		got := fireAt(due, q)
		if got.Before(due) {
			t.Fatalf("fireAt(%v after the epoch, q %v) is %v early", due.Sub(quantumEpoch), q, due.Sub(got))
		}
		if late := got.Sub(due); late >= q {
			t.Fatalf("fireAt(%v after the epoch, q %v) is %v late, want < q", due.Sub(quantumEpoch), q, late)
		}
		if off := got.Sub(quantumEpoch) % q; off != 0 {
			t.Fatalf("fireAt(%v after the epoch, q %v) is off the grid by %v", due.Sub(quantumEpoch), q, off)
		}
		// Another due in the same quantum fires at the same instant.
		start := got.Add(-q + 1)
		other := start.Add(time.Duration(r.Int64N(int64(q))))
		if o := fireAt(other, q); !o.Equal(got) {
			t.Fatalf("dues %v and %v in one quantum %v fire at %v and %v", due.Sub(quantumEpoch), other.Sub(quantumEpoch), q, got.Sub(quantumEpoch), o.Sub(quantumEpoch))
		}
	}
	if d := quantumEpoch.Add(time.Hour); !fireAt(d, 0).Equal(d) {
		t.Error("a zero quantum must not move the due time")
	}
	for _, c := range []struct{ rtt, want time.Duration }{
		{0, 0}, {time.Millisecond, 20 * time.Microsecond}, {500 * time.Microsecond, 10 * time.Microsecond},
		{50 * time.Millisecond, maxQuantum}, {150 * time.Millisecond, maxQuantum},
	} {
		if got := quantumFor(c.rtt); got != c.want {
			t.Errorf("quantumFor(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}

// TestCoalescingDelayIsRecordedAsLateness runs echoes through a link whose quantum is made
// large (4 ms) and checks that the link still never delivers early (every echo takes at
// least one RTT) and that the delay coalescing adds shows in the link's lateness record:
// each chunk lands anywhere in its quantum, so the recorded median is about half of it. A
// record taken against the coalesced instant instead of the chunk's due time reads near 0.
func TestCoalescingDelayIsRecordedAsLateness(t *testing.T) {
	t.Parallel()
	const (
		rtt = 10 * time.Millisecond
		q   = 4 * time.Millisecond
		n   = 30
	)
	upstream := tcpServer(t, echo)
	rec := &lag.Recorder{}
	p, err := Start(Config{Upstream: upstream, RTT: rtt, Lag: rec, quantum: q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := dial(t, p.Addr())
	r := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, 1)
	for i := range n {
		time.Sleep(time.Duration(r.IntN(int(3 * time.Millisecond))))
		start := time.Now()
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		// The first echo also pays the modelled handshake (2 RTT before the server's
		// first byte reaches the client); every echo pays at least one RTT.
		if took := time.Since(start); took < rtt {
			t.Fatalf("echo %d took %v, less than the %v RTT", i, took, rtt)
		}
	}
	s := rec.Summary()
	if s.N < 2*n {
		t.Fatalf("lateness recorded for %d chunks, want at least %d", s.N, 2*n)
	}
	if s.P50 < q/4 {
		t.Errorf("median recorded lateness %v with a %v quantum: the coalescing delay is not recorded", s.P50, q)
	}
	t.Logf("recorded lateness: p50 %v, p99 %v, max %v over %d chunks", s.P50, s.P99, s.Max, s.N)
}

// TestPastDueReleasesWithoutWaiting checks that a chunk whose due time has passed is
// released at once: no timer made, nothing registered with the clock, and no rounding up to
// the quantum (here a whole second, so a rounded wait would show).
func TestPastDueReleasesWithoutWaiting(t *testing.T) {
	for _, spin := range []time.Duration{DefaultSpinWindow, -1} {
		p, err := Start(Config{Upstream: tcpServer(t, echo), RTT: time.Millisecond, SpinWindow: spin, quantum: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var (
			tm *time.Timer
			w  waiter
		)
		start := time.Now()
		if !p.waitUntil(start.Add(-time.Nanosecond), make(chan struct{}), &tm, &w) {
			t.Fatal("waitUntil reported the link closed")
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("spin %v: a past-due release waited %v", spin, took)
		}
		if tm != nil || w.ch != nil {
			t.Errorf("spin %v: a past-due release armed a timer (%v) or registered with the clock (%v)", spin, tm != nil, w.ch != nil)
		}
		_ = p.Close()
	}
}
