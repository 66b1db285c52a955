package topology

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// TestRequestRecordTimesHaveNoScaleNoise: a request's times are whole nanoseconds of
// scenario time, so a time scale of 0.1 leaves no binary noise in the per-request file
// (18,323,666 ns at scale 0.1 read 183.23665999999997 ms).
func TestRequestRecordTimesHaveNoScaleNoise(t *testing.T) {
	t.Parallel()
	start := time.Now()
	ev := client.Event{Start: start.Add(18323666), Latency: 18323666, TLS: 18323666, Connect: 7, FirstByte: 18323666}
	rq := requestRecord(ev, start, time.Time{}, 0.1)
	for name, got := range map[string]float64{"latency_ms": rq.LatencyMs, "tls_ms": rq.TLSMs, "first_byte_ms": rq.FirstByteMs, "start_ms": rq.StartMs} {
		if got != 183.23666 {
			t.Errorf("%s = %v, want 183.23666", name, got)
		}
	}
	if rq.ConnectMs != 0.00007 {
		t.Errorf("connect_ms = %v, want 0.00007 (7 ns at scale 0.1)", rq.ConnectMs)
	}
	line, err := json.Marshal(rq)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(line), ":183.23666"); got != 4 || strings.Contains(string(line), "183.236659") {
		t.Errorf("request line %s: want start_ms, latency_ms, tls_ms and first_byte_ms written as 183.23666", line)
	}
}
