package netsim

import (
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/netsim/clock"
)

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
			w  clock.Waiter
		)
		start := time.Now()
		if !p.waitUntil(start.Add(-time.Nanosecond), make(chan struct{}), &tm, &w) {
			t.Fatal("waitUntil reported the link closed")
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("spin %v: a past-due release waited %v", spin, took)
		}
		if tm != nil || w.Waited() {
			t.Errorf("spin %v: a past-due release armed a timer (%v) or registered with the clock (%v)", spin, tm != nil, w.Waited())
		}
		_ = p.Close()
	}
}
