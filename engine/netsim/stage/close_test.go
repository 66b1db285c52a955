package stage

import (
	"testing"
	"time"
)

// TestSequence pins the order stage: an item is released at its due time or behind the
// item before it, never before NotBefore, and a second reset is dropped.
func TestSequence(t *testing.T) {
	var s Sequence
	for i, c := range []struct {
		k    Kind
		due  time.Duration
		want time.Duration
		ok   bool
	}{
		{Data, 10, 10, true},
		{Data, 5, 10, true},  // a shorter jitter draw waits behind the chunk ahead
		{Fin, 20, 20, true},  // a FIN after the data
		{Rst, 15, 20, true},  // a reset never overtakes the FIN
		{Rst, 30, 0, false},  // a second reset is dropped
		{Data, 25, 25, true}, // the dropped reset moved nothing
	} {
		got, ok := s.Place(c.k, at(c.due))
		if ok != c.ok || ok && !got.Equal(at(c.want)) {
			t.Errorf("item %d (kind %d due +%v): +%v %v, want +%v %v", i, c.k, c.due, got.Sub(t0), ok, c.want, c.ok)
		}
	}
	held := Sequence{NotBefore: at(100)}
	if got, _ := held.Place(Data, at(50)); !got.Equal(at(100)) {
		t.Errorf("data due before NotBefore released at +%v, want +100ns", got.Sub(t0))
	}
	if got, _ := held.Place(Fin, at(150)); !got.Equal(at(150)) {
		t.Errorf("FIN due after NotBefore released at +%v, want +150ns", got.Sub(t0))
	}
}

// TestCloseTiming pins when a FIN or reset is due: one one-way delay after it was made,
// never before the handshake's floor, whatever the window holds.
func TestCloseTiming(t *testing.T) {
	const rtt = 80 * time.Millisecond
	p := Path{Floor: at(rtt + rtt/2), Window: NewWindow(rtt, 0, true), Delay: NewLatency(rtt, 0, 0)}
	p.Data(t0, 5*iw, nil) // fills the window for rounds to come: a close does not wait for it
	if got := p.Due(t0); !got.Equal(p.Floor) {
		t.Errorf("FIN at the connect due at +%v, want the floor +%v", got.Sub(t0), rtt+rtt/2)
	}
	if got := p.Due(at(time.Second)); !got.Equal(at(time.Second + rtt/2)) {
		t.Errorf("FIN at +1s due at +%v, want +%v", got.Sub(t0), time.Second+rtt/2)
	}
}
