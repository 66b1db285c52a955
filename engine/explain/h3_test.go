package explain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
)

// HTTP/3 behind a NAT that drops what comes on a forgotten flow: a request after a 40 s
// pause (the NAT forgets after 30 s) is told as the pause's expiry, with the PING that would
// have kept the flow, not TCP's keepalive; a request that waited 40 s for its answer on a
// fresh flow is told as the expiry in flight.
func TestExplainHTTP3NAT(t *testing.T) {
	t.Parallel()
	params := `{"network":{"rtt":"50ms"},"server":{"http":"3","idle_timeout":"60s","response":{"delay":"0s"}},
		"client":{"implementation":"model","idle_timeout":"60s","timeout":"90s","retry":{"attempts":0}},
		"load":{"concurrency":1},"middlebox":{"preset":"a-nat","idle_timeout":"30s","on_expiry":"drop"}}`
	reqs := []report.Request{
		{Seq: 0, StartMs: 0, LatencyMs: 100, Conn: 1, Attempts: 1, Status: 200},
		{Seq: 1, StartMs: 40100, LatencyMs: 60000, Conn: 1, Reused: true, Attempts: 1, Class: "timeout", Error: "timeout: no recent network activity"},
	}
	r, err := NewRun(&report.Run{Params: json.RawMessage(params), Metrics: check.Metrics{MiddleboxExpired: 1, MiddleboxDroppedDatagrams: 9}}, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := Request(r, 1)
	for _, w := range []string{"past the 30000.0 ms idle timeout of the middlebox (a-nat) on the path", "A keep-alive PING more often than every 30000.0 ms (client.quic.keepalive_period) would have kept the flow.", "kalab's HTTP/3 client (quic-go) does not retry"} {
		if !strings.Contains(text, w) {
			t.Errorf("after a pause: lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "tcp_keepalive") || strings.Contains(text, "before the answer came") {
		t.Errorf("after a pause: told as TCP, or as an expiry in flight:\n%s", text)
	}
	reqs[1].StartMs = 200 // 100 ms after the last response: the flow was fresh
	r, _ = NewRun(r.Record, reqs, nil)
	if text, _ = Request(r, 1); !strings.Contains(text, "the NAT forgot the flow about 30000.0 ms after the request (middlebox_expired 1), before the answer came") {
		t.Errorf("in flight: lacks the expiry in flight:\n%s", text)
	}
}
