package explain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

func f(v float64) *float64 { return &v }

// run builds a hand-made sequential run: RTT 100 ms, server idle 1 s, bursts of 2.
func handRun(t *testing.T, client string, reqs []report.Request, conns []report.Conn) *Run {
	t.Helper()
	params := `{"network":{"rtt":"100ms"},"server":{"idle_timeout":"1s","max_requests":0},
		"client":` + client + `,"load":{"concurrency":1,"burst":2}}`
	r, err := NewRun(&report.Run{Scenario: "s", Variant: "v", Params: json.RawMessage(params)}, reqs, conns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A retried request: its failed attempt rode the connection the request before it left;
// the paragraph tells that connection's close and the retry rule, with the right signs.
func TestExplainRetriedAndReSent(t *testing.T) {
	t.Parallel()
	reqs := []report.Request{
		{Seq: 0, StartMs: 0, LatencyMs: 300, Conn: 1, Attempts: 1, Status: 200, ServerConn: 1},
		{Seq: 1, StartMs: 300, LatencyMs: 100, Conn: 1, Reused: true, Attempts: 1, Status: 200, ServerConn: 1},
		// Response at 400 ms, written at 350; the server closes at 1,350; its FIN is back at
		// 1,400. Sent at 1,330 (a pause of 930 ms): at the server at 1,380, 30 ms after the close.
		{Seq: 2, StartMs: 1330, LatencyMs: 420, Conn: 2, Attempts: 2, Status: 200, ServerConn: 2},
	}
	conns := []report.Conn{
		{Record: "conn", Side: "server", ID: 1, ClientConn: 1, ClosedMs: f(1350), ClosedBy: "server", Reason: "idle", Requests: 2},
	}
	r := handRun(t, `{"preset":"node-agent","implementation":"model","keepalive":true,"retry":{"attempts":1,"on":["reset","eof"]}}`, reqs, conns)
	if got := r.Notable(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("notable %v, want [2]", got)
	}
	text, _ := Request(r, 2)
	for _, w := range []string{
		"Request 2, sent at 1330.0 ms, took 2 attempts and was answered 200 on connection 2 (new)",
		"a pause of 930.0 ms", "inside the race window (idle − RTT, idle) = (900.0 ms, 1000.0 ms)",
		"Its connection 1 last carried a response at 400.0 ms (request 1's, written by the server at about 350.0 ms)",
		"closed it at 1350.0 ms (idle timeout: server.idle_timeout 1s), 1000.0 ms after its last write",
		"FIN reached the client at about 1400.0 ms", "70.0 ms before that FIN arrived",
		"reached the server at about 1380.0 ms, 30.0 ms after the close",
		"node-agent's retry rule (retry.attempts 1 on reset, eof) re-sent it on a new connection",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q:\n%s", w, text)
		}
	}
	// The same story under Go's Transport, re-sent without the caller seeing it.
	reqs[2].Attempts, reqs[2].HiddenRetries = 1, 1
	r = handRun(t, `{"preset":"go-default","implementation":"go-net-http","keepalive":true,"method":"GET","retry":{"attempts":0}}`, reqs, conns)
	text, _ = Request(r, 2)
	for _, w := range []string{"was re-sent 1 time without the caller seeing it", "Go's net/http Transport) re-sent it on a new connection", "hidden_retries"} {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q:\n%s", w, text)
		}
	}
}

// A dial while requests are in flight names the pool's state.
func TestExplainPoolFull(t *testing.T) {
	t.Parallel()
	var reqs []report.Request
	for i := range 4 { // two batches of 2 in flight; the second batch's second request dials
		conn, reused := uint64(i%2+1), i >= 2
		if i == 3 {
			conn, reused = 3, false
		}
		reqs = append(reqs, report.Request{Seq: i, StartMs: float64(i/2) * 100, LatencyMs: 50, Conn: conn, Reused: reused, Attempts: 1, Status: 200})
	}
	params := `{"network":{"rtt":"10ms"},"server":{"idle_timeout":"5s"},"client":{"preset":"go-default","keepalive":true,"max_idle":1},"load":{"concurrency":2,"burst":2}}`
	r, err := NewRun(&report.Run{Params: json.RawMessage(params)}, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := Request(r, 3)
	if want := "pool full: 1 other requests in flight, 1 idle slots (client.max_idle 1)"; !strings.Contains(text, want) {
		t.Errorf("lacks %q:\n%s", want, text)
	}
	if got := r.Notable(); len(got) != 1 || got[0] != 3 {
		t.Errorf("notable %v, want [3]", got)
	}
}

// A balancer's 502: the backend connection the request before it left, the server's close
// of it, the FIN's arrival at the balancer and the gap against the backend window, from
// hand-made records (client RTT 20 ms, backend RTT 400 ms, server idle 6 s).
func TestExplainBalancer502(t *testing.T) {
	t.Parallel()
	reqs := []report.Request{
		{Seq: 0, StartMs: 0, LatencyMs: 1220, Conn: 1, Attempts: 1, Status: 200, BackendConn: 1, BackendAttempts: 1},
		// Response at the client at 1,220 ms: the server wrote it at 1,220 − 10 − 200 = 1,010.
		// A pause of 5,700: at the balancer 5,720 ms after it got the response, inside (5,600, 6,000).
		{Seq: 1, StartMs: 6920, LatencyMs: 170, Conn: 1, Reused: true, Attempts: 1, Status: 502, BackendConn: 1, BackendAttempts: 1, BackendReused: true},
	}
	conns := []report.Conn{{Record: "conn", Side: "server", ID: 1, OpenedMs: 5, ClosedMs: f(7010), ClosedBy: "server", Reason: "idle", Requests: 1}}
	params := `{"network":{"rtt":"20ms"},"server":{"idle_timeout":"6s"},"client":{"preset":"node-agent","keepalive":true,"method":"GET"},
		"load":{"concurrency":1,"burst":1},"balancer":{"preset":"aws-alb","on_backend_error":"error","backend_network":{"rtt":"400ms"}}}`
	r, err := NewRun(&report.Run{Params: json.RawMessage(params)}, reqs, conns)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := Request(r, 1)
	for _, w := range []string{
		"was answered 502 by the balancer (aws-alb)",
		"a pause of 5700.0 ms", "sat idle 5720.0 ms at the balancer, inside the race window (idle − backend RTT, idle) = (5600.0 ms, 6000.0 ms)",
		"forwarded it at about 6930.0 ms", "the server wrote at about 1010.0 ms",
		"closed that connection at 7010.0 ms (idle timeout: server.idle_timeout 6s), 6000.0 ms after its last write",
		"FIN reached the balancer (aws-alb) at about 7210.0 ms", "280.0 ms after it forwarded the request",
		"reached the server at about 7130.0 ms, 120.0 ms after the close",
		"on_backend_error error",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q:\n%s", w, text)
		}
	}
}
