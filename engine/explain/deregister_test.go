package explain_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// Two GETs at once through an ALB, each held 2 s by the server; the backend is
// deregistered at 1.5 s with a 250 ms deregistration delay, so the old target is stopped at
// 1,750 ms, under both requests.
const deregisterInFlight = `
name: lb-deregister
server: {idle_timeout: 60s, response: {delay: 2s}, events: [{do: deregister, at: 1500ms}]}
client: {preset: node-agent}
balancer: {preset: aws-alb, deregistration_delay: 250ms}
load: {requests: 2, burst: 2, concurrency: 2}
`

// On the virtual clock: a 502 the balancer made because the old target of a
// deregistration was stopped under the request is told as that, with the instants the
// plan gives (deregistered at 1,500 ms, delay 250 ms, stopped at 1,750 ms), not as a
// stale backend connection.
func TestExplainDeregistration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := plantest.LoadIn(t, dir, deregisterInFlight)
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: dir, KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, Host: runner.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := explain.Load(out.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Notable(); !slices.Equal(got, []int{0, 1}) || out.Runs[0].Metrics.Status5xx != 2 {
		t.Fatalf("explain lists requests %v and the run measured %v 502s; the plan gives [0 1], 2", got, out.Runs[0].Metrics.Status5xx)
	}
	for _, seq := range []int{0, 1} {
		text, _ := explain.Request(run, seq)
		for _, w := range []string{
			"was answered 502 by the balancer (aws-alb) after 1750.0 ms",
			"The backend was deregistered at 1500.0 ms (server.events deregister at 1.5s); its deregistration delay of 250ms (balancer.deregistration_delay) ended at 1750.0 ms while this request was in flight",
			"closed backend connection",
			"under it at 1750.0 ms, before any response byte",
			"on_backend_error error",
		} {
			if !strings.Contains(text, w) {
				t.Errorf("request %d: the explanation lacks %q:\n%s", seq, w, text)
			}
		}
		if strings.Contains(text, "stale") || strings.Contains(text, "idle") {
			t.Errorf("request %d: told as a stale or idle connection:\n%s", seq, text)
		}
	}
}
