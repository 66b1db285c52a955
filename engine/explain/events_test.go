package explain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// An HTTP/2 stream that reached the server after a reload's GOAWAY is told as the GOAWAY,
// above its last stream id, not as an idle close racing the request; what followed is the
// client's GOAWAY rule (records of scenarios/22-deploy-reload.yaml, h2-goaway-no-resend).
func TestExplainGoAway(t *testing.T) {
	t.Parallel()
	params := `{"network":{"rtt":"100ms"},"server":{"http":"2","tls":true,"events":[{"do":"goaway","at":"1.32s"}]},
		"client":{"implementation":"go-net-http","http2_goaway":"fail","retry":{"attempts":0}},"load":{"concurrency":10,"burst":10}}`
	var reqs []report.Request
	for _, line := range []string{
		`{"seq":9,"start_ms":0,"latency_ms":300,"conn":1,"reused":false,"attempts":1,"status":200,"server_conn":1}`,
		`{"seq":10,"start_ms":1300,"latency_ms":70,"conn":1,"reused":true,"attempts":1,"class":"other","error":"round trip: http2: Transport: cannot retry err [http2: Transport received Server's graceful shutdown GOAWAY]","server_conn":1}`,
	} {
		var q report.Request
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, q)
	}
	var sc report.Conn
	if err := json.Unmarshal([]byte(`{"record":"conn","side":"server","id":1,"client_conn":1,"opened_at_ms":0,"closed_at_ms":1420,"closed_by":"server","reason":"goaway","requests":10}`), &sc); err != nil {
		t.Fatal(err)
	}
	r, err := NewRun(&report.Run{Params: json.RawMessage(params)}, reqs, []report.Conn{sc})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := Request(r, 10)
	for _, w := range []string{
		"The server's reload sent a GOAWAY on it at 1320.0 ms (server.events goaway at 1.32s)",
		"reached the server at about 1350.0 ms, after that GOAWAY, on a stream above its last stream id",
		"client.http2_goaway fail",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "race window") || strings.Contains(text, "met a closed socket") {
		t.Errorf("told as an idle-close race:\n%s", text)
	}
}
