package stage

import (
	"testing"
	"time"
)

// TestPathData pins the chain of stages for data: nothing leaves before the handshake
// lets it, the window splits the bytes by round, pacing serializes each piece, and each
// is due one one-way delay after its last byte left.
func TestPathData(t *testing.T) {
	const rtt = 100 * time.Millisecond
	floor := at(rtt + rtt/2) // the client's side: its first byte reaches the server at 1.5 RTT
	// 8 x 1,448,000 bit/s: 1,448 bytes a millisecond, so a window of IW10 takes 10 ms.
	p := Path{Floor: floor, Window: NewWindow(rtt, 0, true), Pace: NewPacer(8 * MSS * 1000), Delay: NewLatency(rtt, 0, 0)}
	if !p.Shaped() {
		t.Fatal("a path with a window and a pacer is not shaped")
	}
	got := p.Data(t0, iw+1000, nil)
	// Ready at 1 RTT (the SYN-ACK is back); IW serialized by 1 RTT + 10 ms, due half a
	// trip later; the other 1,000 bytes leave in the next round at 2 RTT and take
	// 1000/1448 ms (690,607 ns) on the link.
	wantPieces(t, "IW + 1,000 bytes at the connect", got, []Piece{
		{iw, at(rtt + 10*time.Millisecond + rtt/2)},
		{1000, at(2*rtt + 690607 + rtt/2)},
	})

	plain := Path{Floor: floor, Window: NewWindow(rtt, -1, true), Delay: NewLatency(rtt, 0, 0)}
	if plain.Shaped() {
		t.Error("a path without window or pacer is shaped")
	}
	got = plain.Data(at(time.Second), 1<<20, nil)
	wantPieces(t, "1 MiB without slow start or pacing", got, []Piece{{1 << 20, at(time.Second + rtt/2)}})
}
