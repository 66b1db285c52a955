package explain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
)

// A burst of 40 at a listen queue of 4 (the kernel holds 5) drained one per 2 ms: request 7
// connected only on a re-sent SYN and the server never accepted it; request 8's connect
// never completed. Each paragraph names the queue, its size and accept rate, how many came
// at it at once, the SYN retry, and the client's timeout.
func TestExplainListenQueue(t *testing.T) {
	t.Parallel()
	params := `{"network":{"rtt":"50ms"},"server":{"backlog":4,"accept_delay":"2ms"},
		"client":{"preset":"go-default","implementation":"go-net-http","keepalive":false,"timeout":"2500ms","retry":{"attempts":0}},
		"load":{"concurrency":40}}`
	var reqs []report.Request
	for i := range 40 {
		reqs = append(reqs, report.Request{Seq: i, StartMs: float64(i) * 0.25, LatencyMs: 200, Conn: uint64(i + 1), Attempts: 1, Status: 200, ServerConn: uint64(i + 1), ConnectMs: 50})
	}
	reqs[7] = report.Request{Seq: 7, StartMs: 1.75, LatencyMs: 2500, Conn: 8, Attempts: 1, Class: "timeout", Error: "context deadline exceeded", ConnectMs: 1050}
	reqs[8] = report.Request{Seq: 8, StartMs: 2, LatencyMs: 2500, Conn: 9, Attempts: 1, Class: "timeout", Error: "context deadline exceeded"}
	var conns []report.Conn
	for i := range 40 {
		if i != 7 && i != 8 {
			conns = append(conns, report.Conn{Record: "conn", Side: "server", ID: uint64(i + 1), ClientConn: uint64(i + 1), Requests: 1})
		}
	}
	r, err := NewRun(&report.Run{Scenario: "s", Variant: "v", Params: json.RawMessage(params), Metrics: check.Metrics{SYNRetriedConnects: 12}}, reqs, conns)
	if err != nil {
		t.Fatal(err)
	}
	common := []string{
		"The server's listen queue holds 5 waiting connections (server.backlog 4; the kernel takes one more) and the server accepts one every 2.0 ms (server.accept_delay), so a full queue takes 10.0 ms to empty.",
		"40 requests started within 10.0 ms of this one, each dialing its own connection: more than the queue holds.",
		"(client.timeout 2500ms).",
		"go-default (Go's net/http Transport) re-sends only a request that failed on a reused connection",
	}
	text, _ := Request(r, 7)
	for _, w := range append(common,
		"The server never accepted connection 8: the connection records hold no server side for it.",
		"Its connect took 1050.0 ms: its first SYN met a full queue and was dropped, and the client's kernel sent it again after about 1 s (this run counts 12 connects like it in syn_retried_connects).",
		"but the server had not taken the connection from the queue when the client gave up at 2501.8 ms") {
		if !strings.Contains(text, w) {
			t.Errorf("request 7: lacks %q:\n%s", w, text)
		}
	}
	text, _ = Request(r, 8)
	for _, w := range append(common, "Its connect did not complete: the queue had no room for its SYN or the ones the kernel re-sent when the client gave up at 2502.0 ms") {
		if !strings.Contains(text, w) {
			t.Errorf("request 8: lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "nothing in the records says it was stale") {
		t.Errorf("request 8: told as a stale connection:\n%s", text)
	}
}

// The client is named by its preset, else the real program that ran, else as kalab's own
// client of its kind; never by the word "model".
func TestClientName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		params string
		client *report.ClientRuntime
		want   string
	}{
		{`{"client":{"preset":"node-agent","implementation":"model"}}`, nil, "node-agent"},
		{`{"client":{"implementation":"model"}}`, nil, "kalab's model client"},
		{`{"server":{"http":"3"},"client":{"implementation":"model"}}`, nil, "kalab's HTTP/3 client (quic-go)"},
		{`{"client":{"implementation":"exec"}}`, &report.ClientRuntime{Adapter: "curl"}, "curl"},
		{`{"client":{"implementation":"exec"}}`, &report.ClientRuntime{Command: []string{"/usr/bin/myclient", "-x"}}, "myclient"},
		{`{"client":{"implementation":"go-net-http"}}`, nil, "go-net-http"},
	} {
		r, err := NewRun(&report.Run{Params: json.RawMessage(c.params), Client: c.client}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.clientName(); got != c.want {
			t.Errorf("%s: client named %q, want %q", c.params, got, c.want)
		}
	}
}
