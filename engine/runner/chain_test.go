package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
	"github.com/kalab-dev/kalab/engine/topology"
)

// chainFile is a path of three boxes from the client: an AWS NLB (350 s, an RST to the
// next segment), kube-proxy's IPVS table (900 s, drop) and a node firewall that forgets a
// flow idle for 120 s (drop), in front of a server that never closes an idle connection.
// requests' pool keeps every connection (no idle timeout, no keepalive probes), and the
// pauses of 1-8 min between bursts of 2 straddle the boxes' timeouts. The flip variant
// puts the 120 s box first on the path, nlb-ipvs drops it, and nlb-first-retry has the
// client re-send a request that drew a reset (a hang it does not re-send).
const chainFile = `
name: chain
server: {idle_timeout: none}
client: {preset: python-requests, timeout: 30s}
middlebox:
  - {preset: aws-nlb}
  - {preset: kube-ipvs}
  - {idle_timeout: 120s, on_expiry: drop}
load: {requests: 24, burst: 2, pause: 1m..8m, seed: 7}
variants:
  - name: nlb-first
  - name: tight-first
    middlebox:
      - {idle_timeout: 120s, on_expiry: drop}
      - {preset: kube-ipvs}
      - {preset: aws-nlb}
  - name: nlb-ipvs
    middlebox: [{preset: aws-nlb}, {preset: kube-ipvs}]
  - name: nlb-first-retry
    client: {retry: {attempts: 1, on: [reset, eof]}}
`

// chainBox is a box of the chain as the test derives its outcomes: its idle timeout and
// whether it drops (else it resets the next segment).
type chainBox struct {
	idle time.Duration
	drop bool
	name string // as explain names it
}

// chainExpect derives a run's counts from the plan's pauses alone: the request after a
// pause meets the first box on the path whose timeout the pause outlasts (its segment
// crosses the boxes in order); a dropping box makes it hang for the client's 30 s timeout,
// a resetting one fails it at once. Each lost request costs its burst a new connection.
// met counts the requests each box met on a forgotten flow.
func chainExpect(t *testing.T, pauses []time.Duration, boxes []chainBox) (timeouts, resets int, met []int) {
	t.Helper()
	met = make([]int, len(boxes))
	for _, g := range pauses {
		for i, b := range boxes {
			if g >= b.idle && g < b.idle+time.Second {
				t.Fatalf("a pause of %v ends within a second of a box's %v timeout, where its poll decides: choose another seed", g, b.idle)
			}
			if g < b.idle {
				continue
			}
			met[i]++
			if b.drop {
				timeouts++
			} else {
				resets++
			}
			break
		}
	}
	return timeouts, resets, met
}

// On the virtual clock a chain of three boxes fails exactly the requests the geometry
// says: behind NLB -> IPVS -> 120 s firewall, a pause of 2-5.8 min hangs at the firewall
// and a longer one draws the NLB's reset; with the firewall first every long pause hangs
// there and the NLB never answers; without it only the NLB's resets remain. Each count is
// the oracle's too, and the record lists each box with its own figures.
func TestChainOfBoxesFailsWhereTheGeometrySays(t *testing.T) {
	t.Parallel()
	p := plan(t, chainFile)
	st := p.Scenarios[0].Runs[0].Settings
	pauses := load.Pauses(configure.Load(st, shape.Scale(1)))
	nlb, ipvs, fw := chainBox{350 * time.Second, false, "aws-nlb"}, chainBox{900 * time.Second, true, "kube-ipvs"}, chainBox{120 * time.Second, true, ""}
	paths := map[string][]chainBox{"nlb-first": {nlb, ipvs, fw}, "tight-first": {fw, ipvs, nlb}, "nlb-ipvs": {nlb, ipvs}, "nlb-first-retry": {nlb, ipvs, fw}}
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string][2]int{}
	for _, r := range out.Runs {
		boxes := paths[r.Variant]
		timeouts, resets, met := chainExpect(t, pauses, boxes)
		classes[r.Variant] = [2]int{timeouts, resets}
		if r.Clock != scenario.ClockVirtual || r.Status != report.StatusPass {
			t.Fatalf("%s: %s on the %q clock: %s", r.Variant, r.Status, r.Clock, r.Error)
		}
		m := r.Metrics
		failed, retried := timeouts+resets, 0
		if r.Variant == "nlb-first-retry" {
			failed, retried = timeouts, resets // each reset is re-sent on a new connection
		}
		got := fmt.Sprintf("errors %v (timeout %v, reset %v), retries %v, connections %v, middlebox_resets %v",
			m.Errors, m.ErrorsByClass.Timeout, m.ErrorsByClass.Reset, m.Retries, m.Connections, m.MiddleboxResets)
		want := fmt.Sprintf("errors %d (timeout %d, reset %d), retries %d, connections %d, middlebox_resets %d",
			failed, timeouts, failed-timeouts, retried, 1+timeouts+resets, resets)
		t.Logf("%s: %s", r.Variant, got)
		if got != want {
			t.Errorf("%s: measured %s; the pauses %v say %s", r.Variant, got, pauses, want)
		}
		if r.Predicted == nil || !predictedErrors(r, failed) {
			t.Errorf("%s: the oracle does not predict %d errors: %+v", r.Variant, failed, r.Predicted)
		}
		exactPredictions(t, r)
		checkChainHops(t, r, boxes, met)
		if r.Variant != "nlb-first-retry" {
			checkChainExplained(t, out.Dir, r.Variant, boxes)
		}
	}
	// The seed's pauses must tell the paths apart: behind the NLB first some requests hang
	// at the firewall and some draw the NLB's reset; with the firewall first all of them
	// hang; without the firewall only the resets remain.
	nf, tf, ni := classes["nlb-first"], classes["tight-first"], classes["nlb-ipvs"]
	if nf[0] == 0 || nf[1] == 0 || tf != [2]int{nf[0] + nf[1], 0} || ni != [2]int{0, nf[1]} {
		t.Errorf("timeouts and resets per path %v: the pauses do not tell the paths apart", classes)
	}
}

// predictedErrors reports whether the run's prediction counts n errors.
func predictedErrors(r *report.Run, n int) bool {
	for _, c := range r.Predicted.Counts {
		if c.Metric == "errors" {
			return c.Predicted && c.Value == n
		}
	}
	return false
}

// checkChainHops checks the record's hops: the boxes in path order, each with its own
// figures (a box drops the bytes of each request it met on a forgotten flow, and a
// resetting box answers each with its reset), and every box carrying every connection.
func checkChainHops(t *testing.T, r *report.Run, boxes []chainBox, met []int) {
	t.Helper()
	var mb []report.Hop
	for _, h := range r.Hops {
		if h.Role == topology.RoleMiddlebox {
			mb = append(mb, h)
		}
	}
	if len(mb) != len(boxes) || r.Hops[1].Role != topology.RoleMiddlebox {
		t.Fatalf("%s: hops %+v, want %d boxes behind the client", r.Variant, r.Hops, len(boxes))
	}
	var expired, dropped float64
	for _, h := range mb {
		expired += h.Stats["middlebox_expired"]
		dropped += h.Stats["middlebox_dropped_bytes"]
	}
	if m := r.Metrics; m.MiddleboxExpired != expired || m.MiddleboxDroppedBytes != dropped || m.MiddleboxFlows != mb[0].Stats["middlebox_flows"] || expired == 0 {
		t.Errorf("%s: flat middlebox_expired %v, dropped_bytes %v, flows %v; the boxes' sums %v and %v, the first box's flows %v",
			r.Variant, m.MiddleboxExpired, m.MiddleboxDroppedBytes, m.MiddleboxFlows, expired, dropped, mb[0].Stats["middlebox_flows"])
	}
	for i, b := range boxes {
		wantResets := 0.0
		if !b.drop {
			wantResets = float64(met[i])
		}
		if mb[i].Stats["middlebox_resets"] != wantResets {
			t.Errorf("%s: box %d (%s) sent %v resets, want %v", r.Variant, i, mb[i].Name, mb[i].Stats["middlebox_resets"], wantResets)
		}
		if dropped := mb[i].Stats["middlebox_dropped_bytes"] > 0; dropped != (met[i] > 0) {
			t.Errorf("%s: box %d (%s) dropped %v bytes and met %d requests on a forgotten flow", r.Variant, i, mb[i].Name, mb[i].Stats["middlebox_dropped_bytes"], met[i])
		}
		if mb[i].Stats["middlebox_flows"] != r.Metrics.Connections {
			t.Errorf("%s: box %d carried %v flows, the client opened %v connections", r.Variant, i, mb[i].Stats["middlebox_flows"], r.Metrics.Connections)
		}
	}
}

// checkChainExplained checks that explain names, for each failed request, the box of the
// chain it met: the first on the path whose timeout the connection's idle time outlasted,
// with that box's fate.
func checkChainExplained(t *testing.T, dir, variant string, boxes []chainBox) {
	t.Helper()
	run, err := explain.Load(dir, "chain/"+variant)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range run.Requests {
		if q.Class == "" {
			continue
		}
		last := lastAnswered(run.Requests, q)
		idle := time.Duration((q.StartMs - last.StartMs - last.LatencyMs) * float64(time.Millisecond))
		i := slices.IndexFunc(boxes, func(b chainBox) bool { return idle >= b.idle })
		if i < 0 {
			t.Fatalf("%s request %d failed after %v idle, under every box's timeout", variant, q.Seq, idle)
		}
		name := fmt.Sprintf("idle timeout of box %d of %d on the path", i+1, len(boxes))
		if boxes[i].name != "" {
			name += " (" + boxes[i].name + ")"
		}
		fate := "Its GET went into the void: the box dropped it"
		if !boxes[i].drop {
			fate = "Its GET was the flow's next segment, and the box answered it with a reset."
		}
		text, _ := explain.Request(run, q.Seq)
		if !strings.Contains(text, name+": the box forgot the flow") || !strings.Contains(text, fate) {
			t.Errorf("%s request %d (idle %v): %s\nwant %q and %q", variant, q.Seq, idle, text, name, fate)
		}
	}
}

// On the real clock the same chain runs as three relays on loopback sockets, at 1/50 of
// scenario time: the first five pauses (186, 104, 167, 261 and 377 s, each at least 14 s of
// scenario time, 280 ms of real time, from a box's timeout) fail three requests at the
// 120 s firewall and one at the NLB's reset, as on the virtual clock.
func TestChainOfBoxesOnTheRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("about 25 s of real time")
	}
	if testci.Race() {
		// The detector slows the relays past what the boxes' expiry polls see (a box once met
		// a request on a forgotten flow without dropping its bytes, and the run was not judged
		// noisy); the plain pass judges this test.
		t.Skip("real-clock chain relays under the race detector measure the detector") // skip: -race only: CI's plain pass runs it
	}
	t.Parallel()
	src := strings.Replace(chainFile, "requests: 24", "requests: 12", 1)
	src = strings.Replace(src, "name: chain\n", "name: chain\nclock: real\ntime_scale: 0.02\n", 1)
	src = src[:strings.Index(src, "variants:")]
	p := plan(t, src)
	st := p.Scenarios[0].Runs[0].Settings
	pauses := load.Pauses(configure.Load(st, shape.Scale(1)))
	boxes := []chainBox{{350 * time.Second, false, "aws-nlb"}, {900 * time.Second, true, "kube-ipvs"}, {120 * time.Second, true, ""}}
	timeouts, resets, met := chainExpect(t, pauses, boxes)
	if timeouts != 3 || resets != 1 {
		t.Fatalf("the pauses %v say %d hangs and %d resets; the test is written for 3 and 1", pauses, timeouts, resets)
	}
	out, err := Execute(context.Background(), p, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	r := out.Runs[0]
	if r.Clock != scenario.ClockReal || r.Status != report.StatusPass {
		t.Fatalf("%s on the %q clock: %s", r.Status, r.Clock, r.Error)
	}
	m := r.Metrics
	if m.ErrorsByClass.Timeout != 3 || m.ErrorsByClass.Reset != 1 || m.Errors != 4 || m.Connections != 5 {
		t.Errorf("measured %v errors (timeout %v, reset %v) on %v connections; the pauses say 4 (3, 1) on 5",
			m.Errors, m.ErrorsByClass.Timeout, m.ErrorsByClass.Reset, m.Connections)
	}
	checkChainHops(t, r, boxes, met)
}
