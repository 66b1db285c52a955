package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// virtualOpts are the options of a test that runs on the virtual clock.
func virtualOpts(t *testing.T) Options {
	o := opts(t)
	o.Host = TestHost(t)
	return o
}

// bundled loads files of the bundled suite.
func bundled(t *testing.T, names ...string) *scenario.Plan {
	t.Helper()
	var files []string
	for _, n := range names {
		files = append(files, filepath.Join("..", "..", "scenarios", n))
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exactPredictions fails for every count the oracle predicts that the run did not measure
// exactly: on the virtual clock no timer is late, so there is no band to allow.
func exactPredictions(t *testing.T, r *report.Run) {
	t.Helper()
	if r.Predicted == nil {
		return
	}
	for _, c := range r.Predicted.Counts {
		if !c.Predicted {
			continue
		}
		if c.AtMost && c.Measured <= float64(c.Value) {
			continue
		}
		if c.Measured != float64(c.Value) {
			t.Errorf("%s/%s: %s measured %v, the plan predicts %d (%s)", r.Scenario, r.Variant, c.Metric, c.Measured, c.Value, c.Reason)
		}
	}
}

// TestStaleRaceVirtualExact runs file 04 on the virtual clock: node-agent's 15 errors are
// the plan's 15 races, every predicted count is exact, and a second run gives the same
// record in every field but the wall-clock ones.
func TestStaleRaceVirtualExact(t *testing.T) {
	run := func() *Outcome {
		out, err := Execute(context.Background(), bundled(t, "04-stale-race.yaml"), virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	start := time.Now()
	first := run()
	wall := time.Since(start)
	second := run()
	byVariant := map[string]*report.Run{}
	for _, r := range first.Runs {
		byVariant[r.Variant] = r
		if r.Clock != scenario.ClockVirtual {
			t.Errorf("%s ran on the %q clock, want virtual", r.Variant, r.Clock)
		}
		if r.Status != report.StatusPass {
			t.Errorf("%s: status %s (%s)", r.Variant, r.Status, r.Error)
		}
		exactPredictions(t, r)
	}
	if r := byVariant["node-agent"]; r == nil || r.Metrics.Errors != 15 {
		t.Fatalf("node-agent: %+v errors, want exactly 15", r)
	}
	for i, r := range second.Runs {
		a, b := comparable(t, first.Runs[i]), comparable(t, r)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the second run's record differs from the first:\n%s\n%s", r.Variant, a, b)
		}
		ra, rb := requestsOf(t, first.Dir, first.Runs[i]), requestsOf(t, second.Dir, r)
		if ra != rb {
			t.Errorf("%s: the second run's requests differ from the first", r.Variant)
		}
	}
	t.Logf("file 04 on the virtual clock: %d runs in %v of wall time", len(first.Runs), wall)
}

// comparable is a run record without the fields that are the machine's, not the model's:
// wall-clock stamps, ids, and the process's CPU, memory and scheduling figures; and without
// the byte counts, which can differ by a TLS alert: a client that closes a connection at
// the instant its peer's FIN or reset arrives sends its close_notify before or after the
// link has torn the connection down, whichever goroutine Go runs first (48 bytes up in one
// of a CI pass's runs under -race).
func comparable(t *testing.T, r *report.Run) string {
	t.Helper()
	c := *r
	c.RunID, c.StartedAt, c.WallMs, c.Timing = "", time.Time{}, 0, nil
	m := c.Metrics
	m.CPUUsPerRequest, m.PeakRSSMB = 0, 0
	m.BytesUp, m.BytesDown = 0, 0
	c.Metrics = m
	c.Hops = nil // their stats carry the same byte counts; the rest is in the metrics
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requestsOf is the run's requests file.
func requestsOf(t *testing.T, dir string, r *report.Run) string {
	t.Helper()
	if r.RequestsFile == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, r.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVirtualRefusedRunIsAnError: a file that asks for the virtual clock with a part that
// needs real time ends as an engine error naming the part, before anything starts.
func TestVirtualRefusedRunIsAnError(t *testing.T) {
	p := plan(t, `
name: refused
clock: virtual
client: {exec: curl}
load: {requests: 1}
`)
	o := virtualOpts(t)
	out, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Runs[0]
	if r.Status != report.StatusError || !strings.Contains(r.Error, "cannot run on the virtual clock: client.exec") {
		t.Fatalf("status %s, error %q: want an engine error naming client.exec", r.Status, r.Error)
	}
}

// TestVirtualSameAtAnyGOMAXPROCS: the same file gives the same record whether the runtime
// has one P, two or eight: the virtual clock's figures do not depend on the scheduler.
func TestVirtualSameAtAnyGOMAXPROCS(t *testing.T) {
	p := bundled(t, "04-stale-race.yaml")
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var want []string
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		out, err := Execute(context.Background(), p, virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range out.Runs {
			got = append(got, comparable(t, r)+requestsOf(t, out.Dir, r))
		}
		if want == nil {
			want = got
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("GOMAXPROCS %d: %s differs from GOMAXPROCS 1", procs, out.Runs[i].Variant)
			}
		}
	}
}

// TestClientCloseReasons: a client whose idle timeout (1 s) is shorter than the server's
// (5 s) closes each connection a 2 s pause leaves idle, and the connection records say so:
// of 4 requests one per burst, the first 3 connections close by the client's idle timeout
// and the last at the end of the run; the server closes none. With keep-alive off the
// request asks for Connection: close and the server closes first: the client's own reason
// for the same connection does not replace the server's.
func TestClientCloseReasons(t *testing.T) {
	for _, tc := range []struct {
		client string
		want   map[string]map[string]int
	}{
		{"{idle_timeout: 1s}", map[string]map[string]int{"client": {"idle": 3, "end": 1}}},
		{"{keepalive: false}", map[string]map[string]int{"server": {"requested": 4}}},
	} {
		p := plan(t, "name: a\nnetwork: {rtt: 10ms}\nserver: {idle_timeout: 5s}\nclient: "+tc.client+
			"\nload: {requests: 4, burst: 1, pause: 2s}\n")
		out, err := Execute(context.Background(), p, virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		r := out.Runs[0]
		if r.Status != report.StatusPass || !reflect.DeepEqual(r.Closes, tc.want) {
			t.Errorf("client %s: %s (%s), closes %v; want %v", tc.client, r.Status, r.Error, r.Closes, tc.want)
		}
	}
}

// TestMiddleboxHangsExplained runs file 15 on the virtual clock and explains its failures
// from the records: each failed request rode a connection idle past the box's 350 s, the
// box forgot the flow exactly 350 s after that connection's last response, and what became
// of the request is the box's own rule: dropped until the client's 30 s timeout behind the
// firewall, a reset behind the NAT gateway. The fixes the file demonstrates are named.
func TestMiddleboxHangsExplained(t *testing.T) {
	out, err := Execute(context.Background(), bundled(t, "15-nat-black-hole.yaml"), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	fate := map[string]string{
		"no-fix":          "Its GET went into the void: the box dropped it, and nothing came back until the client gave up after 30s (client.timeout).",
		"aws-nat-gateway": "Its GET was the flow's next segment, and the box answered it with a reset.",
	}
	box := map[string]string{"no-fix": "aws-network-firewall", "aws-nat-gateway": "aws-nat-gateway"}
	explained := 0
	for _, rec := range out.Runs {
		run, err := explain.Load(out.Dir, "nat-black-hole/"+rec.Variant)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range run.Requests {
			if q.Class == "" {
				continue
			}
			last := lastAnswered(run.Requests, q)
			seen := last.StartMs + last.LatencyMs
			text, _ := explain.Request(run, q.Seq)
			want := []string{
				fmt.Sprintf("The connection then sat idle %.1f ms, past the 350000.0 ms idle timeout of the middlebox (%s) on the path: the box forgot the flow at about %.1f ms", q.StartMs-seen, box[rec.Variant], seen+350000),
				fate[rec.Variant],
				"A client idle timeout below 350000.0 ms (client.idle_timeout) would have closed the connection before the box forgot it",
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("%s request %d: %s\nwant %q", rec.Variant, q.Seq, text, w)
				}
			}
			explained++
		}
	}
	// no-fix and aws-nat-gateway fail the first request of bursts 2 and 3; the fixes none.
	if explained != 4 {
		t.Errorf("%d failed requests explained; the file's checks say 2 in each of no-fix and aws-nat-gateway", explained)
	}
}

// TestListenQueueTimeoutsExplained: 20 connections dial at once (SYNs arrive at 25 ms) into
// a listen queue of 4 (the kernel holds 5) while the server, idle, accepts one at once and
// then one per 100 ms. 6 get in; the 14 dropped SYNs are re-sent at 1 s (arriving at
// 1.025 s), when the queue is empty again: 6 more get in and are accepted at 1.025, 1.125,
// ... 1.525 s, answered half a round trip later, so those accepted from 1.425 s end past the
// client's 1.45 s timeout (2 of them); the 8 left wait for the next SYN retry at 3 s and time
// out. So 10 requests time out, 6 connect on a retried SYN, 8 never open a connection, and
// each of those is explained as a dropped SYN, never as a request Go's Transport declined
// to re-send.
func TestListenQueueTimeoutsExplained(t *testing.T) {
	p := plan(t, "name: q\nnetwork: {rtt: 50ms}\nserver: {backlog: 4, accept_delay: 100ms}\n"+
		"client: {preset: go-default, keepalive: false, timeout: 1450ms}\nload: {requests: 20, concurrency: 20}\n")
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Runs[0]
	if rec.Metrics.Errors != 10 || rec.Metrics.ErrorsByClass.Timeout != 10 || rec.Metrics.SYNRetriedConnects != 6 {
		t.Fatalf("errors %v (timeouts %v), syn_retried_connects %v; the queue gives 10, 10 and 6",
			rec.Metrics.Errors, rec.Metrics.ErrorsByClass.Timeout, rec.Metrics.SYNRetriedConnects)
	}
	run, err := explain.Load(out.Dir, "q/default")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range run.Requests {
		if q.Class == "" || q.Conn != 0 {
			continue
		}
		n++
		text, _ := explain.Request(run, q.Seq)
		for _, w := range []string{
			"its connection never opened",
			"The server's listen queue holds 4 waiting connections (server.backlog; the kernel takes one more), and the server accepts one per 100ms (server.accept_delay).",
			"20 requests started at once (load.concurrency)",
			"(6 connections of this run got in on such a retry: syn_retried_connects)",
			"before the client's timeout of 1.45s (client.timeout) ended the wait.",
			"go-default (Go's net/http Transport) returns a failed dial to the caller",
		} {
			if !strings.Contains(text, w) {
				t.Errorf("request %d: %s\nwant %q", q.Seq, text, w)
			}
		}
		if strings.Contains(text, "isReplayable") {
			t.Errorf("request %d is blamed on Go's replay rule: %s", q.Seq, text)
		}
	}
	if n != 8 {
		t.Errorf("%d requests without a connection explained, want 8", n)
	}
}

// TestGoReplayRulesExact runs Go's own Transport on the virtual clock over one stale race
// per variant: a GET with a body and a POST with an Idempotency-Key are re-sent on their
// own (request.go isReplayable: GetBody, or the key), a plain POST fails; the oracle
// predicts each count exactly.
func TestGoReplayRulesExact(t *testing.T) {
	p := plan(t, `name: gb
network: {rtt: 150ms}
server: {idle_timeout: 2s}
client: {preset: go-default, body_bytes: 10}
load: {requests: 40, burst: 2, pause: 1.5s..2.5s, seed: 3}
variants:
  - name: get
    expect: ["errors == 0", "hidden_retries == 1"]
  - name: post
    client: {method: POST}
    expect: ["errors == 1", "hidden_retries == 0"]
  - name: post-key
    client: {method: POST, headers: {Idempotency-Key: abc}}
    expect: ["errors == 0", "hidden_retries == 1"]
`)
	out, err := Execute(context.Background(), p, virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %v", r.Variant, r.Status, r.Error, r.Checks)
		}
		exactPredictions(t, r)
		for _, c := range r.Predicted.Counts {
			if c.Metric == "hidden_retries" && !c.Predicted {
				t.Errorf("%s: hidden_retries not predicted (%s)", r.Variant, c.Reason)
			}
		}
	}
}

// TestServerIdleClosesBehindTheBalancer: behind the balancer the server's idle closes are
// the server's own count, not the client-side link's (which faces the balancer and saw
// none). In file 12 every backend connection but the last ends by the server's 6 s idle
// close (the 5 that raced and the 5 whose pause outlasted it), so the count is the
// predicted backend connections less one: 10.
func TestServerIdleClosesBehindTheBalancer(t *testing.T) {
	out, err := Execute(context.Background(), bundled(t, "12-alb-backend-race.yaml"), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		if r.Variant != "alb-node" {
			continue
		}
		var backends int
		for _, c := range r.Predicted.Counts {
			if c.Metric == "backend_connections" && c.Predicted {
				backends = c.Value
			}
		}
		if backends != 11 || r.Metrics.ServerIdleCloses != float64(backends-1) {
			t.Errorf("server_idle_closes %v with %d predicted backend connections; want %d", r.Metrics.ServerIdleCloses, backends, backends-1)
		}
		return
	}
	t.Fatal("no alb-node run")
}

// lastAnswered is the last request before q that was answered on q's connection: the one
// whose response left the connection idle until q.
func lastAnswered(reqs []report.Request, q report.Request) report.Request {
	var last report.Request
	for _, p := range reqs {
		if p.Conn == q.Conn && p.Status > 0 && p.Seq < q.Seq {
			last = p
		}
	}
	return last
}
