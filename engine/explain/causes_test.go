package explain_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// runBundled runs one variant of a bundled scenario file and loads it for explanation.
func runBundled(t *testing.T, file, variant string) (*report.Run, *explain.Run) {
	t.Helper()
	plan, err := scenario.LoadFiles([]string{"../../scenarios/" + file})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: dir, KalabVersion: "test", Log: zerolog.Nop(),
		Parallel: 1, Host: runner.TestHost(t), Filter: regexp.MustCompile("/" + variant + "$")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 {
		t.Fatalf("%d runs of %s/%s", len(out.Runs), file, variant)
	}
	run, err := explain.Load(out.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return out.Runs[0], run
}

// File 20's long poll over HTTP/3: the NAT forgets the UDP flow while the request waits for
// its answer. The paragraph names that expiry with the record's own counts, the dropped
// answer, the client's idle timeout that ended it, and the PING that would have kept the
// flow; it names the client as the HTTP/3 client, not "model".
func TestExplainNATExpiry(t *testing.T) {
	t.Parallel()
	rec, run := runBundled(t, "20-h3-nat-rebinding.yaml", "long-poll")
	m := rec.Metrics
	if m.Errors != 1 || m.MiddleboxExpired != 1 || m.MiddleboxDroppedDatagrams == 0 {
		t.Fatalf("the run measured errors %v, middlebox_expired %v, middlebox_dropped_datagrams %v; the file expects 1, 1, > 0", m.Errors, m.MiddleboxExpired, m.MiddleboxDroppedDatagrams)
	}
	text := explain.All(run)
	for _, w := range []string{
		"Request 0 failed with timeout",
		"through the NAT gcp-cloud-nat-udp on the path, which forgets a UDP flow after 30000.0 ms",
		"The server answered only after 40000.0 ms (server.response.delay 40s)",
		"the client sends no keep-alive PINGs (client.quic.keepalive_period not set; pings_sent 0)",
		"the NAT forgot the flow about 30000.0 ms after the request (middlebox_expired 1)",
		fmt.Sprintf("the NAT dropped it (middlebox_dropped_datagrams %d in the run)", int(m.MiddleboxDroppedDatagrams)),
		"client.idle_timeout 1m0s, the lower of both ends' max_idle_timeout",
		"A keep-alive PING more often than every 30000.0 ms (client.quic.keepalive_period) would have kept the flow",
		"kalab's HTTP/3 client (quic-go) does not retry",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the explanation lacks %q:\n%s", w, text)
		}
	}
	for _, bad := range []string{"nothing in the records says it was stale", "model does not retry"} {
		if strings.Contains(text, bad) {
			t.Errorf("the explanation says %q:\n%s", bad, text)
		}
	}
}

// File 14's HTTP/1.1 burst on the real clock: every request that failed did so on a
// connection the server never accepted, and its paragraph names the listen queue.
func TestExplainListenQueueRun(t *testing.T) {
	t.Parallel()
	rec, run := runBundled(t, "14-listen-queue-burst.yaml", "http1")
	failed := 0
	for _, q := range run.Requests {
		if q.Class == "" {
			continue
		}
		failed++
		text, _ := explain.Request(run, q.Seq)
		for _, w := range []string{"listen queue holds 33 waiting connections (server.backlog 32", "server.accept_delay", "client.timeout 2.5s"} {
			if !strings.Contains(text, w) {
				t.Fatalf("request %d: the explanation lacks %q:\n%s", q.Seq, w, text)
			}
		}
	}
	if failed == 0 {
		testci.SkipOrFail(t, "no request of the burst failed (%v errors): the machine let every SYN retry find room, so the story cannot be judged", rec.Metrics.Errors)
	}
}
