package goclient

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/kalabtest"
)

// stale is the plan of kalab's docs example: RTT 100 ms, a server that closes a connection
// after 500 ms idle, 10 POSTs one at a time with a 450 ms pause after each. Every POST after
// a pause leaves on a connection the server has just closed, and Go's Transport does not
// re-send a POST on its own (net/http transport.go, shouldRetryRequest: a POST is not
// replayable).
func stale(expect ...string) kalabtest.Scenario {
	return kalabtest.Scenario{
		Name:   "service-post",
		RTT:    100 * time.Millisecond,
		Server: kalabtest.Server{TLS: true, IdleTimeout: 500 * time.Millisecond},
		Method: "POST",
		Load:   kalabtest.Load{Requests: 10, Burst: 1, Pause: 450 * time.Millisecond},
		Expect: expect,
	}
}

// The service's client as it is: every other POST fails. The failed one takes its
// connection with it, so the next POST dials a fresh connection and succeeds; the one after
// reuses that connection after a pause and fails: POSTs 2, 4, 6, 8, 10.
func TestPlainClient(t *testing.T) {
	r := kalabtest.Run(t, stale("errors == 5", "connections == 5"), kalabtest.Client(New()))[0]
	if r.Metrics.Errors != 5 || r.Metrics.HiddenRetries != 0 {
		t.Errorf("errors %v, hidden re-sends %v; want 5, 0", r.Metrics.Errors, r.Metrics.HiddenRetries)
	}
}

// With RetryOnReset, no POST fails. Each re-send dials a fresh connection, which goes back
// to the pool, so the next POST reuses it after a pause and meets a closed connection in
// turn: every POST after a pause (9) is sent twice. kalab counts a second connection taken
// inside one RoundTrip as a hidden re-send (hidden_retries), whoever made it.
func TestRetryOnReset(t *testing.T) {
	build := func(tc *tls.Config, dial kalabtest.DialFunc) http.RoundTripper {
		return &RetryOnReset{Next: &http.Transport{TLSClientConfig: tc, DialContext: dial, IdleConnTimeout: 90 * time.Second}}
	}
	r := kalabtest.Run(t, stale("errors == 0", "hidden_retries == 9", "connections == 10"), kalabtest.Transport(build))[0]
	if r.Metrics.Errors != 0 || r.Metrics.HiddenRetries != 9 {
		t.Errorf("errors %v, hidden re-sends %v; want 0, 9", r.Metrics.Errors, r.Metrics.HiddenRetries)
	}
}
