package oracle

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// quicPlan is a sequential HTTP/3 run: bursts of 3 at 50 ms RTT, 15 s between them.
func quicPlan(server, client time.Duration) Plan {
	return Plan{Requests: 12, Burst: 3, RTT: 50 * time.Millisecond, HTTP3: true,
		Pauses: []time.Duration{15 * time.Second, 15 * time.Second, 15 * time.Second},
		QUIC:   QUIC{ServerIdle: server, ClientIdle: client}}
}

// The negotiated idle timeout is the smaller of the two ends' (RFC 9000 10.1), whichever
// end advertises it: a pause longer than it ends the connection, a shorter one does not.
func TestQUICNegotiatedIdle(t *testing.T) {
	for _, c := range []struct {
		name           string
		server, client time.Duration
		conns          int
	}{
		{"server lower", 10 * time.Second, 30 * time.Second, 4},
		{"client lower", 30 * time.Second, 10 * time.Second, 4},
		{"both above the pauses", 20 * time.Second, 30 * time.Second, 1},
		{"only the server advertises", 10 * time.Second, 0, 4},
		{"neither advertises", 0, 0, 1},
	} {
		p := Predict(quicPlan(c.server, c.client), 0)
		got, ok := p.Count(Connections)
		if !ok || !got.Predicted || got.Value != c.conns || got.Lo != c.conns || got.Hi != c.conns {
			t.Errorf("%s: connections %+v, want exactly %d", c.name, got, c.conns)
		}
		if r, _ := p.Count(ReusedRequests); r.Value != 12-c.conns {
			t.Errorf("%s: reused %d, want %d", c.name, r.Value, 12-c.conns)
		}
		if e, _ := p.Count(Errors); !e.Predicted || e.Value != 0 {
			t.Errorf("%s: errors %+v, want 0: an idle QUIC connection ends silently", c.name, e)
		}
	}
}

// A pause within a round trip of the negotiated timeout is not placed on either side.
func TestQUICEdgeUncertain(t *testing.T) {
	p := quicPlan(15*time.Second, 30*time.Second)
	got, _ := Predict(p, 0).Count(Connections)
	if got.Lo != 1 || got.Hi != 4 || len(got.Uncertain) != 3 {
		t.Errorf("pauses on the edge: %+v, want 1..4 with 3 uncertain", got)
	}
}

// What the idle rule does not cover is not predicted: a box on the path, loss, concurrency.
func TestQUICNotPredicted(t *testing.T) {
	for name, edit := range map[string]func(*Plan){
		"middlebox":   func(p *Plan) { p.Middlebox = &Middlebox{IdleTimeout: 30 * time.Second} },
		"loss":        func(p *Plan) { p.QUIC.Lossy = true },
		"concurrency": func(p *Plan) { p.Concurrency = 10 },
		"long poll":   func(p *Plan) { p.Server.Delay = 40 * time.Second },
	} {
		p := quicPlan(10*time.Second, 30*time.Second)
		edit(&p)
		if c, _ := Predict(p, 0).Count(Connections); c.Predicted || c.Reason == "" {
			t.Errorf("%s: %+v, want not predicted with a reason", name, c)
		}
	}
}

// quic-go sends a keep-alive PING after min(keepalive_period, negotiated idle / 2) without
// a packet: at 50 ms RTT and a negotiated 10 s it pings every 5 s (period 10 s) or 2 s, and
// no 15 s pause ends the connection. Without PINGs the same plan opens 4.
func TestQUICKeepAlivePings(t *testing.T) {
	t.Parallel()
	for _, period := range []time.Duration{2 * time.Second, 10 * time.Second, time.Minute} {
		p := quicPlan(10*time.Second, 30*time.Second)
		p.QUIC.KeepAlivePeriod, p.QUIC.MaxAckDelay = period, 25*time.Millisecond
		got := Predict(p, 0)
		check(t, fmt.Sprint("period ", period), got, want{Connections: 1, ReusedRequests: 11, Errors: 0, Retries: 0})
		if c, _ := got.Count(Connections); c.Lo != 1 || c.Hi != 1 {
			t.Errorf("period %s: connections %d..%d, want exactly 1", period, c.Lo, c.Hi)
		}
	}
	// A negotiated 300 ms: half is 150 ms, but 1.5 PTO (up to 1.5 x (3 x 50 + 25 + 1) =
	// 264 ms) plus the round trip reaches it: the PTO estimate decides, not predicted.
	p := quicPlan(300*time.Millisecond, 30*time.Second)
	p.QUIC.KeepAlivePeriod, p.QUIC.MaxAckDelay = 10*time.Second, 25*time.Millisecond
	if c, _ := Predict(p, 0).Count(Connections); c.Predicted || !strings.Contains(c.Reason, "PTO") {
		t.Errorf("PINGs near the idle timeout: %+v, want not predicted, naming the PTO", c)
	}
}
