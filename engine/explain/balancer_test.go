package explain_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/testkit/plantest"
)

// An ALB closes the client's idle connections at 60 s; node-agent keeps its own forever and
// does not retry. Every pause (59.91-59.99 s) lies inside the race window of the client's
// hop (idle − RTT, idle) = (59.9 s, 60 s), and the server's 120 s never closes a backend
// connection the balancer's 60 s pool still holds.
const balancerFrontRace = `
name: lb-front-race
network: {rtt: 100ms}
server: {idle_timeout: 120s}
client: {preset: node-agent}
balancer: {preset: aws-alb}
load: {requests: 12, burst: 2, pause: 59.91s..59.99s, seed: 1}
`

// On the virtual clock: a request that meets the balancer's own idle close is explained by
// that close, not by a backend race. The timeline follows from the plan: a burst is a new
// connection (a handshake and a request, 2 RTT) and a reused one (1 RTT); the balancer
// wrote the burst's last response RTT/2 before the client read it, closes 60 s later, and
// its FIN is back 60 s after the client read it, failing the next burst's first request,
// sent a drawn pause after it; the next request opens a new connection at that FIN.
func TestExplainBalancerIdleClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := plantest.LoadIn(t, dir, balancerFrontRace)
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: dir, KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, Host: runner.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	st := plan.Scenarios[0].Runs[0].Settings
	rtt := msOf(time.Duration(st.Network.RTT))
	idle := msOf(time.Duration(st.Balancer.IdleTimeout))
	pauses := load.Pauses(configure.Load(st, shape.Scale(1)))
	run, err := explain.Load(out.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 4, 6, 8, 10}; !slices.Equal(run.Notable(), want) || out.Runs[0].Metrics.Errors != 5 {
		t.Fatalf("explain lists requests %v and the run measured %v errors; the plan predicts %v, 5 errors", run.Notable(), out.Runs[0].Metrics.Errors, want)
	}
	// The oracle predicts the same counts: after each failure the next request reaches the
	// balancer 60 s and two round trips after its backend connection's last response, past
	// the pool's 60 s, so every burst opens a backend connection too.
	if p := out.Runs[0].Predicted; p == nil || p.Disagreement {
		t.Errorf("the oracle's prediction %+v disagrees with the run", p)
	}
	closes := map[uint64]report.Conn{}
	for _, c := range run.Conns {
		if c.Side == report.SideBalancer {
			closes[c.ID] = c
		}
	}
	end := 3 * rtt // the first burst: a new connection, then a reused one
	for k, p := range pauses {
		seq, conn := 2*(k+1), uint64(k+1)
		pause := msOf(p)
		start, closed, fin := end+pause, end-rtt/2+idle, end+idle
		q := run.Requests[seq]
		c, ok := closes[conn]
		if q.Class == "" || q.Conn != conn || math.Abs(q.StartMs-start) > 1e-6 || !ok || c.ClosedMs == nil ||
			*c.ClosedMs != closed || c.ClosedBy != report.ClosedByBalancer || c.Reason != "idle" {
			t.Fatalf("request %d: class %q on connection %d at %v ms; the balancer's record %+v (found %v); the plan: a failure on connection %d at %v ms, closed by the balancer at %v ms for idle",
				seq, q.Class, q.Conn, q.StartMs, c, ok, conn, start, closed)
		}
		text, _ := explain.Request(run, seq)
		for _, w := range []string{
			fmt.Sprintf("Request %d failed with %s", seq, q.Class),
			fmt.Sprintf("a pause of %.1f ms", pause),
			fmt.Sprintf("inside the race window (idle − RTT, idle) = (%.1f ms, %.1f ms) of the client's hop to the balancer (aws-alb)", idle-rtt, idle),
			fmt.Sprintf("Its connection %d last carried a response at %.1f ms (request %d's, written by the balancer at about %.1f ms)", conn, end, seq-1, end-rtt/2),
			fmt.Sprintf("The balancer (aws-alb) closed it at %.1f ms (its idle timeout: balancer.idle_timeout 1m0s), %.1f ms after its last write", closed, idle),
			fmt.Sprintf("Its FIN reached the client at about %.1f ms", fin),
			fmt.Sprintf("sent the request at %.1f ms, %.1f ms before that FIN arrived", start, fin-start),
			fmt.Sprintf("reached the balancer at about %.1f ms, %.1f ms after the close, and met a closed socket", start+rtt/2, start+rtt/2-closed),
			"node-agent does not retry",
		} {
			if !strings.Contains(text, w) {
				t.Errorf("request %d: the explanation lacks %q:\n%s", seq, w, text)
			}
		}
		if strings.Contains(text, "backend") {
			t.Errorf("request %d: the explanation blames the backend:\n%s", seq, text)
		}
		end = fin + 2*rtt // the next request dials at the FIN
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
