package stage

import (
	"testing"
	"time"
)

// TestPacing pins the bandwidth stage: bytes leave at the rate, one after another, and
// bytes that find the link busy wait for it.
func TestPacing(t *testing.T) {
	p := NewPacer(8_000_000) // 1,000,000 bytes per second: 1 µs a byte
	for _, c := range []struct {
		ready time.Duration
		n     int
		want  time.Duration
	}{
		{0, 1000, time.Millisecond},                    // idle link: 1,000 bytes take 1 ms
		{0, 500, 1500 * time.Microsecond},              // ready at once, behind the first
		{time.Millisecond, 1, 1501 * time.Microsecond}, // still queued behind them
		{10 * time.Millisecond, 2000, 12 * time.Millisecond},
	} {
		if got := p.Send(at(c.ready), c.n); !got.Equal(at(c.want)) {
			t.Errorf("%d bytes ready at +%v leave at +%v, want +%v", c.n, c.ready, got.Sub(t0), c.want)
		}
	}
	// 3 bit/s: a byte takes 8/3 s, truncated to the nanosecond.
	if got := NewPacer(3).Send(t0, 1); !got.Equal(at(2666666666)) {
		t.Errorf("1 byte at 3 bit/s leaves at +%v, want +2.666666666s", got.Sub(t0))
	}
}

func TestPacers(t *testing.T) {
	if up, down := Pacers(0, nil, nil); up != nil || down != nil {
		t.Error("no limit gave pacers")
	}
	sup, sdown := NewPacer(1000), NewPacer(1000)
	if up, down := Pacers(1000, sup, sdown); up != sup || down != sdown {
		t.Error("a shared limit did not give the shared pair")
	}
	up, down := Pacers(1000, nil, nil)
	if up == nil || down == nil || up == down {
		t.Fatal("a limit per link did not give a fresh pair")
	}
	if got := up.Send(t0, 125); !got.Equal(at(time.Second)) {
		t.Errorf("125 bytes at 1000 bit/s leave at +%v, want +1s", got.Sub(t0))
	}
}
