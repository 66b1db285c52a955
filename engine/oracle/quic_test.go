package oracle

import (
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
