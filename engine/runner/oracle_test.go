package runner

import (
	"context"
	"github.com/kalab-dev/kalab/engine/predict"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/oracle"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// upperHalfRace puts every pause in the upper half of the race window (idle − RTT, idle) =
// (500, 600) ms: 565-585 ms, at least 15 ms from the window's end and from idle − RTT/2 =
// 550 ms, where the server's FIN reaches the client if the link forwards it at once. The
// model (the FIN delayed RTT/2 like data) makes each burst after the first lose its first
// request: 5 errors, 6 connections (the first, and one after each failure).
const upperHalfRace = `
name: upper-half
network: {rtt: 100ms}
server: {idle_timeout: 600ms}
client: {preset: node-agent}
load: {requests: 12, burst: 2, pause: 565ms..585ms, seed: 1}
`

// On the virtual clock the run's counts are the oracle's, exactly: the link's model of a
// delayed FIN is what makes a pause in the window's upper half race. With the FIN forwarded
// at once (fault close-undelayed) the client sees it before it sends, and those 5 errors
// vanish: a model disagreement this test reports. The real relay delays a FIN and a reset
// by the same code, which netsim's TestResetDelayed times on real sockets.
func TestOracleAgreesOnUpperHalfRace(t *testing.T) {
	t.Parallel()
	p := plan(t, upperHalfRace)
	st := p.Scenarios[0].Runs[0].Settings
	if c, _ := oracle.Predict(predict.Plan(st), 0).Count(oracle.Errors); c.Value != 5 || !c.Predicted {
		t.Fatalf("the plan predicts %d errors (%s); the file is built for 5", c.Value, c.Reason)
	}
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Runs[0]
	if rec.Clock != scenario.ClockVirtual || rec.Status != report.StatusPass || rec.Predicted == nil {
		t.Fatalf("%s on the %q clock (%s), prediction %+v: want a pass on the virtual clock with a prediction", rec.Status, rec.Clock, rec.Error, rec.Predicted)
	}
	if rec.Predicted.Disagreement {
		t.Errorf("model disagreement: %s", rec.Predicted.Reason)
	}
	if rec.Metrics.Errors != 5 || rec.Metrics.Connections != 6 {
		t.Errorf("measured %v errors and %v connections; the oracle predicts 5 and 6", rec.Metrics.Errors, rec.Metrics.Connections)
	}
	exactPredictions(t, rec)
}

// What the oracle does not model it does not predict (HTTP/2's multiplexing), what it
// models it predicts (a middlebox that forgets idle flows, undici's awaited creation-order
// pool racing the server's close and reconnecting in place), and curl's FIN-only liveness
// check of libcurl 7.88.x is blind over TLS (libcurl's fin-first case with its 5 silent
// re-sends).
func TestOracleKnowsWhatItDoesNotModel(t *testing.T) {
	t.Parallel()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..", "scenarios")
	run := func(file, variant string) scenario.Settings {
		p, err := scenario.LoadFiles([]string{filepath.Join(root, file)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Scenarios[0].Runs {
			if r.Variant == variant {
				return r.Settings
			}
		}
		t.Fatalf("%s has no variant %s", file, variant)
		return scenario.Settings{}
	}
	for _, c := range []struct{ file, variant, why string }{
		{"11-http2-cold-start.yaml", "default", "HTTP/2"},
	} {
		got, _ := oracle.Predict(predict.Plan(run(c.file, c.variant)), 0).Count(oracle.Errors)
		if got.Predicted || !strings.Contains(got.Reason, c.why) {
			t.Errorf("%s/%s: errors predicted %v (%q); want not predicted, naming the %s", c.file, c.variant, got.Predicted, got.Reason, c.why)
		}
	}
	// The box that forgets idle flows is modelled: file 15 loses the first request after
	// each of its two pauses longer than the box's 350 s.
	if got, _ := oracle.Predict(predict.Plan(run("15-nat-black-hole.yaml", "no-fix")), 0).Count(oracle.Errors); !got.Predicted || got.Value != 2 {
		t.Errorf("nat-black-hole/no-fix: errors %+v; want 2 predicted", got)
	}
	// undici's pool in the stale race at 150 ms RTT: 2 requests race, 15 connections (its
	// two clients reconnecting in place); against a server that closes after 5 requests,
	// each connection carries 5.
	for _, c := range []struct {
		variant, metric string
		want            int
	}{{"model-race-150", oracle.Errors, 2}, {"model-race-150", oracle.Connections, 15}, {"model-max5", oracle.Connections, 8}} {
		if got, _ := oracle.Predict(predict.Plan(run("truth/undici.yaml", c.variant)), 0).Count(c.metric); !got.Predicted || got.Value != c.want {
			t.Errorf("truth-undici/%s: %s %+v; want %d predicted", c.variant, c.metric, got, c.want)
		}
	}
	got, _ := oracle.Predict(predict.Plan(run("truth/libcurl.yaml", "model-fin-first")), 0).Count("hidden_retries")
	if !got.Predicted || got.Value != 5 {
		t.Errorf("libcurl fin-first: hidden re-sends %+v; want 5 (the close_notify hides the close from curl's check)", got)
	}
}

// keyed and pinged are the oracle's two re-send and keep-alive rules run against the model on
// the virtual clock: a POST with an Idempotency-Key under retry.idempotent_only is re-sent
// (3 races of seed 4's 29 pauses in (1.85 s, 2 s)), a PUT without one is not; an HTTP/3
// client sending quic-go's keep-alive PINGs keeps one connection through 15 s pauses that
// end it without them (negotiated idle 10 s).
const keyed = `
name: resend-key
network: {rtt: 150ms}
server: {idle_timeout: 2s, keepalive_hint: false}
client:
  preset: node-agent
  retry: {attempts: 1, on: [reset, eof], idempotent_only: true}
load: {requests: 300, burst: 10, pause: 1.5s..2.5s, seed: 4}
variants:
  - name: post-key
    client: {method: POST, headers: {Idempotency-Key: k-1}}
  - name: put-no-key
    client: {method: PUT}
`

const pinged = `
name: h3-pings
network: {rtt: 50ms}
server: {http: "3", idle_timeout: 10s}
client: {preset: quic-go-http3}
load: {requests: 12, burst: 3, pause: 15s}
variants:
  - name: pings
  - name: no-pings
    client: {quic: {keepalive_period: none}}
`

func TestOracleFollowsKeysAndPings(t *testing.T) {
	t.Parallel()
	want := map[string][3]float64{ // errors, retries, connections
		"post-key": {0, 3, 23}, "put-no-key": {3, 0, 23}, "pings": {0, 0, 1}, "no-pings": {0, 0, 4},
	}
	var runs []*report.Run
	for _, src := range []string{keyed, pinged} {
		out, err := Execute(context.Background(), plan(t, src), virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, out.Runs...)
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(runs), len(want))
	}
	for _, rec := range runs {
		w, m := want[rec.Variant], rec.Metrics
		if rec.Clock != scenario.ClockVirtual || rec.Predicted == nil {
			t.Fatalf("%s: on the %q clock, prediction %+v", rec.Variant, rec.Clock, rec.Predicted)
		}
		if m.Errors != w[0] || m.Retries != w[1] || m.Connections != w[2] {
			t.Errorf("%s: errors %v, retries %v, connections %v; want %v", rec.Variant, m.Errors, m.Retries, m.Connections, w)
		}
		if rec.Predicted.Disagreement {
			t.Errorf("%s: model disagreement: %s", rec.Variant, rec.Predicted.Reason)
		}
		for _, c := range rec.Predicted.Counts {
			if !c.Predicted {
				t.Errorf("%s: %s not predicted: %s", rec.Variant, c.Metric, c.Reason)
			}
		}
		exactPredictions(t, rec)
	}
}
