package topology

import (
	"testing"
	"time"
)

// A dropped SYN's connect takes the 1 s retransmission in all; the simulated handshake,
// counted from the dial's start, is absorbed into it rather than added (measured in
// scenario 14 at 50 ms RTT: 1,009-1,014 ms).
func TestSynRetriedCountsTheRetransmission(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		connect, handshake time.Duration
		want               bool
	}{
		{50 * ms, 50 * ms, false},     // no retry: the handshake alone
		{60 * ms, 50 * ms, false},     // a late handshake is not a retry
		{1009 * ms, 50 * ms, true},    // retried, as scenario 14 measured it
		{1000 * ms, 0, true},          // no link: the retry alone
		{999 * ms, 10 * ms, false},    // under the retransmission timeout
		{2000 * ms, 2000 * ms, false}, // a long handshake hides a retry inside its wait
		{3050 * ms, 2000 * ms, true},  // one beyond it does not
	} {
		if got := synRetried(c.connect, c.handshake); got != c.want {
			t.Errorf("synRetried(connect %v, handshake %v) = %v, want %v", c.connect, c.handshake, got, c.want)
		}
	}
}
