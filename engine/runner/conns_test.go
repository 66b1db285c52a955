package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// The server's close events reach the run record, the connection file and, for a failed
// request, the request record: who closed, why and when, tied to the client's connection.
func TestServerCloseEventsAreRecorded(t *testing.T) {
	t.Parallel()
	// Pauses of 300 ms against a 100 ms idle close: every burst after the first finds its
	// connection closed. With the liveness check the client sees the FIN and dials again;
	// without it the first request after each pause rides the dead connection and fails.
	p := plan(t, `
name: closes
network: {rtt: 20ms}
server: {idle_timeout: 100ms}
load: {requests: 9, burst: 3, pause: 300ms}
variants:
  - name: checked
    expect: ["connections == 3", "errors == 0"]
  - name: unchecked
    client: {liveness_check: false}
    expect: ["errors == 2"]
  - name: capped
    server: {idle_timeout: 0s, max_requests: 2}
    load: {requests: 6, burst: 0, pause: 0s}
    expect: ["connections == 3", "errors == 0"]
`)
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
	// On the virtual clock a burst's requests follow each other at once: each starts the
	// instant the one before it ended, nowhere near the 100 ms idle close.
	for _, r := range out.Runs {
		if r.Clock != scenario.ClockVirtual {
			t.Errorf("%s ran on the %q clock, want virtual", r.Variant, r.Clock)
		}
		if r.Variant == "capped" || r.RequestsFile == "" {
			continue
		}
		reqs := readLines[report.Request](t, filepath.Join(out.Dir, r.RequestsFile))
		ends := map[int]float64{}
		for _, rq := range reqs {
			ends[rq.Seq] = rq.StartMs + rq.LatencyMs
		}
		for _, rq := range reqs {
			if rq.Seq%3 != 0 {
				if gap := rq.StartMs - ends[rq.Seq-1]; gap != 0 {
					t.Errorf("%s: request %d started %v ms after the one before it in its burst; want 0", r.Variant, rq.Seq, gap)
				}
			}
		}
	}
	want := map[string]map[string]map[string]int{
		// The third connection is open when the load ends; the client closes it.
		"checked": {"server": {"idle": 2}, "client": {"end": 1}},
		// The same: each failed request's connection was the server's idle close, and the
		// retry-less client's new connection for the rest of the burst is the next one.
		"unchecked": {"server": {"idle": 2}, "client": {"end": 1}},
		// Each failed request closes the dead socket; the retry-less client then dials.
		"capped": {"server": {"max_requests": 3}},
	}
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %+v", r.Variant, r.Status, r.Error, r.Checks)
			continue
		}
		if r.ConnectionsFile == "" {
			t.Fatalf("%s: no connection file in the record", r.Variant)
		}
		conns := readLines[report.Conn](t, filepath.Join(out.Dir, r.ConnectionsFile))
		if len(conns) != int(r.Metrics.ServerConnections) {
			t.Errorf("%s: %d connection lines, %v server connections", r.Variant, len(conns), r.Metrics.ServerConnections)
		}
		seen := map[uint64]bool{}
		for _, c := range conns {
			if c.Side != "server" || c.ClientConn == 0 || seen[c.ClientConn] || c.ClosedMs == nil || *c.ClosedMs < c.OpenedMs {
				t.Errorf("%s: connection %+v", r.Variant, c)
			}
			seen[c.ClientConn] = true
		}
		// An idle close comes exactly 100 ms after the server wrote the connection's last
		// response, which the client read 10 ms (half the RTT) later: 90 ms after the last
		// answered request on it ended.
		lastEnd := map[uint64]float64{}
		for _, rq := range readLines[report.Request](t, filepath.Join(out.Dir, r.RequestsFile)) {
			if rq.Class == "" {
				lastEnd[rq.ServerConn] = max(lastEnd[rq.ServerConn], rq.StartMs+rq.LatencyMs)
			}
		}
		for _, c := range conns {
			if c.Reason == "idle" && c.ClosedMs != nil && *c.ClosedMs != lastEnd[c.ID]+90 {
				t.Errorf("%s: server connection %d closed idle at %v ms; its last response was read at %v ms, want the close 90 ms later", r.Variant, c.ID, *c.ClosedMs, lastEnd[c.ID])
			}
		}
		if w, ok := want[r.Variant]; ok && !reflect.DeepEqual(r.Closes, w) {
			t.Errorf("%s: closes %v; want %v", r.Variant, r.Closes, w)
		}
		if r.Variant != "unchecked" {
			continue
		}
		byID := map[uint64]report.Conn{}
		for _, c := range conns {
			byID[c.ID] = c
		}
		failed := 0
		for _, rq := range readLines[report.Request](t, filepath.Join(out.Dir, r.RequestsFile)) {
			if rq.Class == "" {
				if rq.ServerConn == 0 || byID[rq.ServerConn].ClientConn != rq.Conn {
					t.Errorf("request %d on client connection %d names server connection %d (%+v)", rq.Seq, rq.Conn, rq.ServerConn, byID[rq.ServerConn])
				}
				continue
			}
			failed++
			c := byID[rq.ServerConn]
			if rq.ServerClosedMs == nil || rq.ServerCloseReason != "idle" || c.ClientConn != rq.Conn {
				t.Errorf("failed request %+v: want the idle close of its connection (%+v)", rq, c)
				continue
			}
			// The server wrote the burst's last response 10 ms (half the RTT) before the
			// client read it and closed 100 ms after writing it; the request came 300 ms
			// after the client read it: 300 + 10 - 100 = 210 ms after the close.
			if gap := rq.StartMs - *rq.ServerClosedMs; gap != 210 {
				t.Errorf("failed request %d starts %v ms after its connection's idle close; want 210", rq.Seq, gap)
			}
		}
		if failed != 2 {
			t.Errorf("unchecked: %d failed requests in the request file; want 2", failed)
		}
	}
}
