package oracle

import (
	"strings"
	"testing"
	"time"
)

// chainHole is a hand-sized chain: an NLB-like box that resets the next segment after
// 350 s, an IPVS-like one that drops after 900 s and a firewall that drops after 120 s,
// in that order from the client; a server that never closes, bursts of 2 and pauses of
// 100 s (every flow lives), 200 s (the firewall forgot), 400 s and 1000 s (all forgot but
// IPVS, then all: the NLB, first on the path, meets the request both times).
func chainHole() Plan {
	nlb := &Middlebox{Name: "nlb", IdleTimeout: 350 * time.Second, Poll: 100 * ms1, ResetNext: true}
	ipvs := &Middlebox{Name: "ipvs", IdleTimeout: 900 * time.Second, Poll: 100 * ms1, Drop: true}
	fw := &Middlebox{Name: "fw", IdleTimeout: 120 * time.Second, Poll: 100 * ms1, Drop: true}
	return Plan{
		Requests: 10, Burst: 2,
		Pauses:    []time.Duration{100 * time.Second, 200 * time.Second, 400 * time.Second, 1000 * time.Second},
		Middlebox: nlb, Chain: []*Middlebox{nlb, ipvs, fw},
		Client: Client{KeepAlive: true, Method: "GET"},
	}
}

// TestChainByHand works the chain out by hand: requests 0-1 open and reuse connection 1,
// 2-3 reuse it after 100 s; 4 hangs at the firewall after 200 s, 5 dials; 6 draws the
// NLB's reset after 400 s, 7 dials; 8 draws it again after 1000 s, 9 dials. Reused: 1, 2,
// 3 and the lost 4, 6 and 8. A client that re-sends a reset loses only 4; with the
// firewall first on the path every long pause hangs there, and re-sending resets saves
// none.
func TestChainByHand(t *testing.T) {
	t.Parallel()
	check(t, "nlb first", Predict(chainHole(), 0), want{Errors: 3, Connections: 4, ReusedRequests: 6, Retries: 0})

	p := chainHole()
	p.Client.Retry = Retry{Attempts: 1, On: []string{"reset", "eof"}}
	check(t, "nlb first, one retry", Predict(p, 0), want{Errors: 1, Retries: 2, Connections: 4, ReusedRequests: 6})

	p.Chain[0], p.Chain[2] = p.Chain[2], p.Chain[0]
	p.Middlebox = p.Chain[0]
	check(t, "firewall first, one retry", Predict(p, 0), want{Errors: 3, Retries: 0, Connections: 4, ReusedRequests: 6})

	p = chainHole()
	p.Client.KeepaliveIdle, p.Client.KeepaliveInterval = 60*time.Second, 60*time.Second
	if c, _ := Predict(p, 0).Count(Errors); c.Predicted || !strings.Contains(c.Reason, "refresh only the first box of the chain") {
		t.Errorf("a chain with keepalive probes: predicted %v (%s); want not predicted, the probes reach the first box only", c.Predicted, c.Reason)
	}
	p = chainHole()
	p.Pauses[3] = 900*time.Second + 50*ms1 // within IPVS's poll of its expiry
	if c, _ := Predict(p, 0).Count(Errors); c.Predicted || !strings.Contains(c.Reason, "ipvs among them") {
		t.Errorf("a pause within a box's poll: predicted %v (%s); want not predicted, naming the box", c.Predicted, c.Reason)
	}
}
