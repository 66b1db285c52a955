package netsim

import (
	"fmt"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim/kernel"
)

// TestReaderReadsOncePerChunk guards the saving of a read per chunk:
// with TCP_INQ each read says whether it left the socket empty, and the
// reader then waits for the next chunk instead of reading again to be told
// EAGAIN. Sequential echo trips through one link carry one chunk each way,
// alone in its socket, so every read that took data left the socket empty:
// none may be followed by an empty read. The portable fallback
// (KALAB_NETSIM_PORTABLE=1), without TCP_INQ, reads once more after each.
func TestReaderReadsOncePerChunk(t *testing.T) {
	const trips, rtt = 20, 2 * time.Millisecond
	p, err := Start(Config{Upstream: tcpServer(t, echo), RTT: rtt})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	for i := range trips {
		echoTrip(t, c, fmt.Sprintf("trip %02d", i))
	}
	_ = c.Close()
	if err := p.Close(); err != nil { // every reader has ended: the counts are whole
		t.Fatal(err)
	}
	chunks, empty := p.chunksRead.Load(), p.emptyAfterData.Load()
	if chunks != 2*trips {
		t.Fatalf("the readers read %d chunks, want %d (one each way per trip)", chunks, 2*trips)
	}
	want := int64(0)
	if kernel.Portable {
		want = chunks
	}
	if empty != want {
		t.Errorf("%d of %d reads that took a chunk were followed by a read that found the socket empty; want %d", empty, chunks, want)
	}
}
