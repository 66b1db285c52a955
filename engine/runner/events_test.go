package runner

import (
	"testing"
)

// flatByVariant is each variant's flat metrics of runPlan(src).
func flatByVariant(t *testing.T, src string) map[string]map[string]float64 {
	t.Helper()
	got := map[string]map[string]float64{}
	for v, r := range runPlan(t, src) {
		got[v] = r.Metrics.Flat()
	}
	return got
}

// eventsH2Src: a warm-up burst of 10 over HTTP/2 ends at 300 ms (a connect, a TLS 1.3
// handshake and a request at 100 ms RTT); after a 1 s pause the second burst of 10 leaves
// at 1,300 ms and reaches the server at 1,350 ms. An event at 1,320 ms falls while all ten
// streams are on the wire: each is above the last stream id of its connection's GOAWAY.
// At 1,360 ms the server has seen them, and a graceful GOAWAY lets them finish.
const eventsH2Src = `
name: h2-events
clock: virtual
network: {rtt: 100ms}
server: {tls: true, http: "2"}
client: {preset: go-default}
load: {requests: 20, burst: 10, concurrency: 10, pause: 1s}
variants:
  - name: quiet
  - name: goaway
    server: {events: [{do: goaway, at: 1320ms}]}
  - name: goaway-no-resend
    server: {events: [{do: goaway, at: 1320ms}]}
    client: {http2_goaway: fail}
  - name: goaway-after-arrival
    server: {events: [{do: goaway, at: 1360ms}]}
  - name: drain
    server: {events: [{do: drain, at: 1320ms, grace: 5s}]}
  - name: restart
    server: {events: [{do: restart, at: 1320ms, gap: 500ms}]}
`

// TestServerEventsHTTP2: Go's Transport re-sends every stream above a GOAWAY's last stream
// id on a new connection (h2_bundle.go, canRetryError: errClientConnGotGoAway), so a
// reload with ten streams on the wire costs ten hidden re-sends and no error, and a client
// that does not re-send (client.http2_goaway fail) ten errors; the same
// GOAWAY once the server has seen them costs nothing. A drain closes the listener, so the
// connects the re-sends need are refused (ten errors of class refused), and a restart
// closes the connections under the streams: ten errors, which no re-send hides (a
// connection lost after the request was written).
func TestServerEventsHTTP2(t *testing.T) {
	t.Parallel()
	got := flatByVariant(t, eventsH2Src)
	want := map[string][3]float64{ // errors, hidden_retries, errors_by_class.refused
		"quiet": {0, 0, 0}, "goaway": {0, 10, 0}, "goaway-no-resend": {10, 0, 0}, "goaway-after-arrival": {0, 0, 0}, "drain": {10, 0, 10}, "restart": {10, 0, 0},
	}
	for v, w := range want {
		m := got[v]
		if g := [3]float64{m["errors"], m["hidden_retries"], m["errors_by_class.refused"]}; g != w {
			t.Errorf("%s: errors, hidden re-sends, refused = %v; want %v", v, g, w)
		}
	}
}

// eventsH1Src: four sequential requests over HTTP/1.1 at 100 ms RTT, a second between a
// response and the next request: sent at 0 (a new connection: done at 300 ms), 1,300,
// 2,400 and 3,500 ms. A reload at 2,420 ms closes the idle connection while request 3 is
// on the wire (it reaches the server at 2,450 ms): the reload race. Go re-sends the GET
// (nothing of the response was read); Node's agent, requests and undici hand the error to
// the caller. After request 2 a reload makes request 2's response the last on its
// connection ("Connection: close"), so request 3 opens a new one and nothing fails; a
// drain instead closes the listener, so the connects of requests 3 (2,400 ms) and 4 (1 s
// after that failure) are refused: 2 errors, both refused, and only connection 1 opened.
// A drain at 2,420 ms races request 3 as the reload does (its FIN reaches Node's agent at
// 2,470 ms: eof), and request 4's connect at 3,470 ms is refused: 2 errors on 1
// connection. A restart at 1,500 ms with a 1 s gap closes connection 1 and the listener:
// request 3's connect (2,400 ms) is refused; request 4 (3,500 ms, 1 s after that failure
// at 2,500) finds the server listening again on the same address: 1 error (refused) and
// 2 connections. A reload in the gap (2,000 ms) finds nothing listening and changes none
// of that.
const eventsH1Src = `
name: h1-events
clock: virtual
network: {rtt: 100ms}
server: {tls: true, events: [{do: goaway, at: 2420ms}]}
client: {preset: node-agent}
load: {requests: 4, burst: 1, pause: 1s}
variants:
  - name: node-agent
  - name: go-default
    client: {preset: go-default}
  - name: requests
    client: {preset: python-requests}
  - name: undici
    client: {preset: undici}
  - name: reload-after-2
    server: {events: [{do: goaway, after_requests: 2}]}
  - name: drain-after-2
    server: {events: [{do: drain, after_requests: 2}]}
  - name: drain-race
    server: {events: [{do: drain, at: 2420ms}]}
  - name: restart-gap
    server: {events: [{do: restart, at: 1500ms, gap: 1s}]}
  - name: restart-gap-reload
    server: {events: [{do: restart, at: 1500ms, gap: 1s}, {do: goaway, at: 2s}]}
`

// TestServerEventsHTTP1: the counts each event gives, from the schedule above. A refused
// connect is an error of class refused and opens no connection.
func TestServerEventsHTTP1(t *testing.T) {
	t.Parallel()
	got := flatByVariant(t, eventsH1Src)
	want := map[string][5]float64{ // errors, hidden_retries, connections, refused, eof
		"node-agent": {1, 0, 2, 0, 1}, "go-default": {0, 1, 2, 0, 0}, "requests": {1, 0, 2, 0, 1}, "undici": {1, 0, 2, 0, 1},
		"reload-after-2": {0, 0, 2, 0, 0}, "drain-after-2": {2, 0, 1, 2, 0}, "drain-race": {2, 0, 1, 1, 1},
		"restart-gap": {1, 0, 2, 1, 0}, "restart-gap-reload": {1, 0, 2, 1, 0},
	}
	for v, w := range want {
		m := got[v]
		if g := [5]float64{m["errors"], m["hidden_retries"], m["connections"], m["errors_by_class.refused"], m["errors_by_class.eof"]}; g != w {
			t.Errorf("%s: errors, hidden re-sends, connections, refused, eof = %v; want %v", v, g, w)
		}
	}
}
