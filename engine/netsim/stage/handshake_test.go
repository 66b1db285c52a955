package stage

import (
	"testing"
	"time"
)

// TestHandshake pins the handshake's instants: the first client byte at the server no
// sooner than 1.5 RTT, the first server byte at the client no sooner than 2 RTT, a
// refused connect's reset at 1 RTT.
func TestHandshake(t *testing.T) {
	const rtt = 30 * time.Millisecond
	up, down := Floors(t0, rtt)
	if !up.Equal(at(45*time.Millisecond)) || !down.Equal(at(60*time.Millisecond)) {
		t.Errorf("floors +%v and +%v, want +45ms and +60ms", up.Sub(t0), down.Sub(t0))
	}
	if got := Refused(t0, rtt); !got.Equal(at(rtt)) {
		t.Errorf("refused connect's reset at +%v, want +%v", got.Sub(t0), rtt)
	}
	// An odd RTT keeps its nanoseconds: 3 ns gives 4 ns (3 + 3/2) and 6 ns.
	up, down = Floors(t0, 3)
	if !up.Equal(at(4)) || !down.Equal(at(6)) {
		t.Errorf("floors at 3 ns RTT +%v and +%v, want +4ns and +6ns", up.Sub(t0), down.Sub(t0))
	}
}
