package runner

import (
	"context"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// runPlan executes a scenario on the virtual clock and fails the test on any run that did
// not pass: every preset here is the model client or Go's Transport, so the file's checks
// are exact and no machine is too busy to judge them.
func runPlan(t *testing.T, src string) map[string]*report.Run {
	t.Helper()
	out, err := Execute(context.Background(), plan(t, src), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*report.Run{}
	for _, r := range out.Runs {
		runs[r.Variant] = r
		if r.Clock != scenario.ClockVirtual {
			t.Errorf("%s ran on the %q clock, want virtual", r.Variant, r.Clock)
		}
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s; metrics %+v; checks %+v", r.Variant, r.Status, r.Error, r.Metrics, r.Checks)
		}
	}
	return runs
}

// Node's https.Agent, undici 6 and Python requests offer only http/1.1 in ALPN: with one
// connection allowed, ten requests at once against an h2-capable server that answers in
// 100 ms queue behind each other. curl and Go's DefaultTransport take h2 over TLS and
// multiplex the ten on their one connection. The file has no network, so the connect and
// the handshake take no simulated time: queued one after another the ten take exactly
// 10 x 100 ms = 1,000 ms, multiplexed they all take the one 100 ms delay at once.
func TestHTTP1OnlyPresetsNeverNegotiateH2(t *testing.T) {
	t.Parallel()
	runPlan(t, `
name: alpn
server: {tls: true, http: "2", response: {delay: 100ms}}
client: {max_conns: 1}
load: {requests: 10, concurrency: 10}
variants:
  - {name: node-agent, client: {preset: node-agent}, expect: ["total_ms == 1000"]}
  - {name: undici, client: {preset: undici}, expect: ["total_ms == 1000"]}
  - {name: python-requests, client: {preset: python-requests}, expect: ["total_ms == 1000"]}
  - {name: curl-multi, client: {preset: curl-multi}, expect: ["total_ms == 100"]}
  - {name: go-default, client: {preset: go-default}, expect: ["total_ms == 100"]}
expect: ["errors == 0", "connections == 1"]
`)
}

// Apache answers its hint only to a request that sent "Connection: keep-alive". Node's
// global agent (timeout 5 s) sends it and shortens its timeout to hint - 1 s = 4 s, so
// 4.5 s pauses cost a new connection each; without the header the hint never comes and
// the one connection survives (the server's 5 s close is later than the pauses). curl
// sends no Connection header and reads no hint. On the virtual clock each pause is exactly
// 4.5 s: 0.5 s past the shortened 4 s timeout and 0.5 s short of the server's 5 s close.
func TestKeepAliveHeaderBringsApachesHint(t *testing.T) {
	t.Parallel()
	runPlan(t, `
name: apache-hint
server: {preset: apache}
load: {requests: 4, burst: 1, pause: 4.5s}
variants:
  - {name: global-agent, client: {preset: node-global-agent}, expect: ["connections == 4"]}
  - {name: no-header, client: {preset: node-global-agent, keepalive_header: false}, expect: ["connections == 1"]}
  - {name: curl-multi, client: {preset: curl-multi}, expect: ["connections == 1"]}
expect: ["errors == 0"]
`)
}

// Separate curl processes, Python requests and Go's default transport resume no TLS
// session (measured against the real programs here); Node's agent keeps a session cache.
func TestTLSResumptionPerPreset(t *testing.T) {
	t.Parallel()
	runPlan(t, `
name: resumption
server: {tls: true}
client: {keepalive: false}
load: {requests: 5}
variants:
  - {name: curl-loop, client: {preset: curl-loop}, expect: ["tls_resumed == 0", "connections == 5"]}
  - {name: python-requests, client: {preset: python-requests, keepalive: false}, expect: ["tls_resumed == 0"]}
  - {name: go-default, client: {preset: go-default, keepalive: false}, expect: ["tls_resumed == 0"]}
  - {name: node-agent-default, client: {preset: node-agent-default}, expect: ["tls_resumed == 4"]}
`)
}

// libcurl 7.88.0 and 7.88.1 check an idle connection with their connection filters, which
// take a waiting TLS close_notify for data on a live connection, so over TLS they reuse the
// connection the server closed after every pause longer than the server's idle close, and
// re-send silently; over plain TCP they see the FIN and dial anew (measured with curl
// 7.88.1 here: 15-21 silent re-sends per 300 stale-race requests over TLS, 0 over plain
// HTTP). From 8.0.0 (the preset's default) input pending on a pooled connection means it
// is dead: a new connection, nothing re-sent. Every pause here is past the close, so each
// burst after the first is one hidden re-send over TLS with 7.88.1 and none with 8.14.1.
func TestCurlReusesClosedTLSConnectionsSilently(t *testing.T) {
	t.Parallel()
	runPlan(t, `
name: curl-close-notify
network: {rtt: 10ms}
server: {idle_timeout: 200ms}
client: {preset: curl-multi}
load: {requests: 5, burst: 1, pause: 400ms}
variants:
  - {name: tls-7.88.1, client: {version: 7.88.1}, server: {tls: true}, expect: ["hidden_retries == 4", "retries == 0", "connections == 5"]}
  - {name: tls-8.14.1, client: {version: 8.14.1}, server: {tls: true}, expect: ["hidden_retries == 0", "failed_attempts == 0", "retries == 0", "connections == 5"]}
  - {name: tls-default, server: {tls: true}, expect: ["hidden_retries == 0", "failed_attempts == 0", "retries == 0", "connections == 5"]}
  - {name: plain-7.88.1, client: {version: 7.88.1}, expect: ["hidden_retries == 0", "retries == 0", "connections == 5"]}
expect: ["errors == 0"]
`)
}
