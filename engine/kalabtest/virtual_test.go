package kalabtest_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/kalabtest"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// The docs' example (testdata/stale.yaml): RTT 100 ms, a server that closes a connection
// after 500 ms idle, 10 requests one at a time with a 450 ms pause after each. Timeline of
// one reuse, from the instant T the server wrote a response: the client has it at T+50 ms,
// sends the next request at T+500, which reaches the server at T+550; the server closed at
// T+500 and its FIN reaches the client at T+550, after the request left. So every request
// after a pause (9) is written on a connection the server already closed, and reads EOF.
//
// Go's Transport (net/http transport.go, (*persistConn).shouldRetryRequest) re-sends a
// request on a new connection when the connection was reused, the request is replayable
// (isReplayable: GET, HEAD, OPTIONS, TRACE, or an Idempotency-Key header, with no body or a
// GetBody) and the error is a transportReadFromServerError (EOF before any response byte).
// A GET is re-sent: 0 errors, 9 hidden re-sends, 10 connections. A POST is not: it fails,
// its connection is gone, so the next POST dials a fresh one that it can use, and the one
// after it reuses again: requests 2, 4, 6, 8, 10 fail (5 errors) and 1, 3, 5, 7, 9 dial
// (5 connections).
//
// With IdleConnTimeout 300 ms the client drops the connection at T+350, before the pause
// ends: every request dials, 10 connections, 0 errors, no re-send.
func TestDocsExampleVirtual(t *testing.T) {
	type counts struct{ errors, hidden, conns float64 }
	for _, tc := range []struct {
		idle      time.Duration
		src       kalabtest.Source
		get, post counts
	}{
		{90 * time.Second, kalabtest.File("testdata/stale.yaml"), counts{0, 9, 10}, counts{5, 0, 5}},
		// The file's checks are for the Transport's default idle timeout: the same plan,
		// built in Go, with this client's.
		{300 * time.Millisecond, staleScenario("errors == 0", "hidden_retries == 0", "connections == 10"), counts{0, 0, 10}, counts{0, 0, 10}},
	} {
		t.Run(fmt.Sprint(tc.idle), func(t *testing.T) {
			var first map[string]string
			for i := range 10 { // identical every time
				c := &http.Client{Transport: &http.Transport{IdleConnTimeout: tc.idle}}
				runs := kalabtest.Run(t, tc.src, kalabtest.Client(c))
				for name, want := range map[string]counts{"get": tc.get, "post": tc.post} {
					r := runs.Variant(name)
					if r == nil {
						t.Fatalf("no run %q", name)
					}
					got := counts{r.Metrics.Errors, r.Metrics.HiddenRetries, r.Metrics.Connections}
					if got != want {
						t.Errorf("run %d, %s: errors, hidden re-sends, connections = %v, want %v", i, name, got, want)
					}
					if r.Clock != "virtual" {
						t.Errorf("run %d, %s: clock %s, want the virtual clock", i, name, r.Clock)
					}
					// Wall time: under the race detector, which slows every goroutine several
					// times, the plain test pass judges it; the counts above hold there too.
					if r.WallMs >= 1000 && !testci.Race() {
						t.Errorf("run %d, %s: %.0f ms of wall time, want under 1 s", i, name, r.WallMs)
					}
				}
				if fp := fingerprints(runs); first == nil {
					first = fp
				} else if fmt.Sprint(fp) != fmt.Sprint(first) {
					t.Errorf("run %d differs from run 0:\n%v\n%v", i, fp, first)
				}
			}
		})
	}
}

// staleScenario is testdata/stale.yaml's plan built in Go, with checks of its own.
func staleScenario(expect ...string) kalabtest.Scenario {
	return kalabtest.Scenario{
		Name:     "go-client-stale",
		RTT:      100 * time.Millisecond,
		Server:   kalabtest.Server{TLS: true, IdleTimeout: 500 * time.Millisecond},
		Load:     kalabtest.Load{Requests: 10, Burst: 1, Pause: 450 * time.Millisecond},
		Expect:   expect,
		Variants: []kalabtest.Variant{{Name: "get"}, {Name: "post", Method: "POST"}},
	}
}

// fingerprints are each run's counts and latencies, which an exact run repeats.
func fingerprints(runs kalabtest.Results) map[string]string {
	out := map[string]string{}
	for _, r := range runs {
		m := r.Metrics
		out[r.Variant] = fmt.Sprintf("req %v ok %v err %v %+v hidden %v conns %v lat %+v total %v",
			m.Requests, m.OK, m.Errors, m.ErrorsByClass, m.HiddenRetries, m.Connections, m.LatencyMs, m.TotalMs)
	}
	return out
}

// A table-driven test over the server's idle timeout, each scenario built in Go: POSTs on
// the docs' plan. A reused connection's request reaches the server 550 ms after the server
// wrote its last response, and the server's FIN reaches the client idle+50 ms after it:
// idle <= 400 ms, the FIN is back before the request leaves (at +500), and Go's Transport
// drops the connection and dials (10 connections, 0 errors); 450 < idle < 550, the request
// leaves on a connection the server has closed (5 errors, as above); idle >= 600 ms, the
// server still holds the connection: one connection, 0 errors.
func TestTableIdleTimeouts(t *testing.T) {
	start := time.Now()
	for _, tc := range []struct {
		idle          time.Duration
		errors, conns float64
	}{
		{300 * time.Millisecond, 0, 10},
		{400 * time.Millisecond, 0, 10},
		{500 * time.Millisecond, 5, 5},
		{600 * time.Millisecond, 0, 1},
		{time.Second, 0, 1},
	} {
		t.Run(fmt.Sprint(tc.idle), func(t *testing.T) {
			sc := kalabtest.Scenario{
				Name:   "idle",
				RTT:    100 * time.Millisecond,
				Server: kalabtest.Server{TLS: true, IdleTimeout: tc.idle},
				Method: "POST",
				Load:   kalabtest.Load{Requests: 10, Burst: 1, Pause: 450 * time.Millisecond},
				Expect: []string{fmt.Sprintf("errors == %v", tc.errors), fmt.Sprintf("connections == %v", tc.conns)},
			}
			r := kalabtest.Run(t, sc, kalabtest.Client(&http.Client{}))[0]
			if r.Metrics.Errors != tc.errors || r.Metrics.Connections != tc.conns || r.Metrics.HiddenRetries != 0 {
				t.Errorf("errors %v, connections %v, hidden re-sends %v; want %v, %v, 0", r.Metrics.Errors, r.Metrics.Connections, r.Metrics.HiddenRetries, tc.errors, tc.conns)
			}
		})
	}
	if d := time.Since(start); d >= 2*time.Second {
		t.Errorf("five runs took %v; want under 2 s", d)
	}
}

// The caller's own timers run on the simulated clock: a server that answers after 2 s and a
// Transport whose ResponseHeaderTimeout is 500 ms. With no link (RTT 0) the connection and
// TLS take no simulated time, so each of the 3 requests fails at exactly 500 ms, and the
// run's 1.5 s of simulated waiting takes milliseconds.
func TestCallersTimersVirtual(t *testing.T) {
	sc := kalabtest.Scenario{
		Name:   "slow",
		Server: kalabtest.Server{TLS: true},
		Load:   kalabtest.Load{Requests: 3},
		Set:    map[string]any{"server.response.delay": 2 * time.Second},
		Expect: []string{"errors == 3"},
	}
	c := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 500 * time.Millisecond}}
	r := kalabtest.Run(t, sc, kalabtest.Client(c))[0]
	if r.Metrics.LatencyMs.P50 != 500 || r.Metrics.LatencyMs.Max != 500 {
		t.Errorf("latency p50 %v ms, max %v ms; want 500, 500", r.Metrics.LatencyMs.P50, r.Metrics.LatencyMs.Max)
	}
	if r.WallMs >= 1000 && !testci.Race() { // wall time: the plain test pass judges it
		t.Errorf("%v ms of wall time for 1.5 s of simulated waiting, want under 1 s", r.WallMs)
	}
}
