package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"

	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// need stops a test when a program it runs is missing (testci.Program).
func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, prog := range progs {
		testci.Program(t, prog)
	}
}

// TestStaleRaceRealServersMatchEmbedded is the stale-connection race of
// scenarios/04-stale-race.yaml, short, against real nginx and real Node and against the
// embedded server closing at the same time. With the client receiving a response at 0, a
// server that closes idle connections at C after sending it (C = 2,000 ms for nginx and
// the embedded server, 2,002 ms for Node's keepAliveTimeout 1000) sends a FIN that reaches
// the client at C; a request sent after a pause p reaches the server at p + RTT after the
// server's clock started. So a pause in (C - RTT, C) fails the burst's first request, a
// longer one finds the FIN already there and opens a new connection, a shorter one reuses
// the connection. The seed is chosen so every pause keeps 40 ms clear of both edges; the
// errors and connections are then counted from the plan's pauses, and every server must
// reach them.
//
// Not parallel: its verdicts hang on 40 ms margins, and with three servers it would crowd
// the package's other timing tests (the exec clients' stale race) on a 2-core machine.
func TestStaleRaceRealServersMatchEmbedded(t *testing.T) {
	need(t, "nginx", "node")
	const (
		rtt    = 150 * time.Millisecond
		margin = 40 * time.Millisecond
		lo     = 2000*time.Millisecond - rtt // the window's edges, widened by Node's 2 ms below
		hi     = 2002 * time.Millisecond
	)
	spec := load.Spec{Requests: 14, Burst: 2, PauseMin: 1500 * time.Millisecond, PauseMax: 2500 * time.Millisecond}
	var pauses []time.Duration
	var inWindow, past int
	for spec.Seed = 1; spec.Seed < 100000; spec.Seed++ {
		pauses = load.Pauses(spec)
		inWindow, past = 0, 0
		clear := true
		for _, p := range pauses {
			switch {
			case p > lo-margin && p < lo+margin, p > hi-margin-2*time.Millisecond && p < hi+margin:
				clear = false
			case p > lo && p < hi:
				inWindow++
			case p >= hi:
				past++
			}
		}
		if clear && inWindow >= 2 && past >= 1 && len(pauses)-inWindow-past >= 1 {
			break
		}
	}
	wantErrors, wantConns := inWindow, 1+inWindow+past
	t.Logf("seed %d: pauses %v: %d in the race window, %d past it", spec.Seed, pauses, inWindow, past)
	src := fmt.Sprintf(`
name: stale-race-real
network: {rtt: 150ms}
server: {tls: true, idle_timeout: 2s, keepalive_hint: false}
client: {preset: node-agent}
load: {requests: 14, burst: 2, pause: 1.5s..2.5s, seed: %d}
variants:
  - name: embedded
  - name: nginx
    server: {exec: nginx}
  - name: node
    server: {exec: node}
expect:
  - errors_by_class.reset + errors_by_class.eof == errors
`, spec.Seed)
	o := opts(t)
	o.Parallel = 3
	out, err := Execute(context.Background(), plan(t, src), o)
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	judged := 0
	defer func() {
		if judged == 0 && !t.Failed() {
			testci.SkipOrFail(t, "no run could be judged: the machine stretched the pauses onto the race window's edges")
		}
	}()
	for _, r := range out.Runs {
		m := r.Metrics
		t.Logf("%s: %s, errors %v, connections %v, server idle closes %v at p50 %.1f ms; server %+v",
			r.Variant, r.Status, m.Errors, m.Connections, m.ServerIdleCloses, m.ServerIdleCloseMs.P50, r.Server)
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %+v", r.Variant, r.Status, r.Error, r.Checks)
		}
		// The verdict: the counts the plan's pauses predict. A loaded machine can stretch
		// a pause (the schedule's timer fires late); a run whose pauses as taken fall
		// elsewhere than the plan's is judged on those, and one whose taken pauses land
		// within the margin of an edge cannot be judged at all.
		// The window's edges move with what this run measured late: the server's close (its
		// timer, or the real server's close as the proxy saw it, past the timeout) and the
		// link's chunks (the response, the request and the FIN), so a pause is judged only
		// when it is farther from an edge than the margin and that lateness together.
		want := map[string]float64{"embedded": 2000, "nginx": 2000, "node": 2002}[r.Variant]
		late := r.Timing.Sources[judge.SrcLink].Max + max(r.Timing.Sources[judge.SrcIdleClose].Max, m.ServerIdleCloseMs.Max-want, 0)
		taken := takenPauses(t, filepath.Join(out.Dir, r.RequestsFile), spec.Burst)
		errs, conns, clear := predictWindow(taken, lo, hi, margin/2+time.Duration(late*float64(time.Millisecond)))
		switch {
		case !clear:
			t.Logf("%s: not judged: pauses as taken %v sit within %.1f ms of lateness and %v of an edge of the race window", r.Variant, taken, late, margin/2)
			continue
		case errs != wantErrors || conns != wantConns:
			t.Logf("%s: pauses as taken %v predict %d errors and %d connections, not the plan's %d and %d",
				r.Variant, taken, errs, conns, wantErrors, wantConns)
		}
		judged++
		if m.Errors != float64(errs) || m.Connections != float64(conns) {
			t.Errorf("%s: %v errors and %v connections; the pauses predict %d and %d (pauses as taken %v; server idle closes %.1f..%.1f ms; link lateness p99 %.2f max %.2f ms; idle_close timers p99 %.2f max %.2f ms)",
				r.Variant, m.Errors, m.Connections, errs, conns, taken, m.ServerIdleCloseMs.Min, m.ServerIdleCloseMs.Max,
				r.Timing.Sources[judge.SrcLink].P99, r.Timing.Sources[judge.SrcLink].Max, r.Timing.Sources[judge.SrcIdleClose].P99, r.Timing.Sources[judge.SrcIdleClose].Max)
		}
		if r.Server == nil || (r.Variant != "embedded" && (r.Server.Kind != r.Variant || r.Server.Version == "")) {
			t.Errorf("%s: server %+v: want the real server's kind and version", r.Variant, r.Server)
		}
		// Every pause past the close is an idle close by the server, seen at the proxy at
		// the server's timeout: never early, the median within 50 ms (a loaded machine makes
		// single timers late, which the race's verdicts above already tolerate).
		if m.ServerIdleCloses < float64(past) || m.ServerIdleCloseMs.Min < want-50 || m.ServerIdleCloseMs.P50 > want+50 {
			t.Errorf("%s: %v server idle closes at %.1f..%.1f ms (p50 %.1f); want at least %d, none before %v - 50 ms, p50 within 50 ms",
				r.Variant, m.ServerIdleCloses, m.ServerIdleCloseMs.Min, m.ServerIdleCloseMs.Max, m.ServerIdleCloseMs.P50, past, want)
		}
		if err := report.ValidateRunDir(out.Dir); err != nil {
			t.Error(err)
		}
		data, err := os.ReadFile(filepath.Join(out.Dir, r.ConnectionsFile))
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(data), "\n"); r.Variant != "embedded" && float64(lines) != m.ProxyConnections {
			t.Errorf("%s: %d connection records for %v proxy connections", r.Variant, lines, m.ProxyConnections)
		}
		var first report.Conn
		_ = json.Unmarshal(data[:strings.IndexByte(string(data), '\n')], &first)
		if r.Variant != "embedded" && (first.Side != "proxy" || first.ID != 1 || first.ClosedMs == nil || *first.ClosedMs <= first.OpenedMs || first.IdleMs == nil) {
			t.Errorf("%s: first connection record %+v: want the proxy's record of connection 1, closed, with its idle time", r.Variant, first)
		}
	}
}

// takenPauses reads a run's request file and returns each pause as the client took it:
// from the end of a burst's last request to the start of the next burst.
func takenPauses(t *testing.T, path string, burst int) []time.Duration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rqs []report.Request
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rq report.Request
		if err := json.Unmarshal([]byte(line), &rq); err != nil {
			t.Fatal(err)
		}
		rqs = append(rqs, rq)
	}
	sort.Slice(rqs, func(i, j int) bool { return rqs[i].Seq < rqs[j].Seq })
	var out []time.Duration
	for i := burst; i < len(rqs); i += burst {
		prev := rqs[i-1]
		gap := rqs[i].StartMs - (prev.StartMs + prev.LatencyMs)
		out = append(out, time.Duration(gap*float64(time.Millisecond)))
	}
	return out
}

// predictWindow counts the errors and connections a sequence of pauses gives against a server
// whose race window is (lo, hi); clear is false when a pause lies within margin of an edge.
func predictWindow(pauses []time.Duration, lo, hi, margin time.Duration) (errs, conns int, clear bool) {
	conns = 1
	for _, p := range pauses {
		if (p > lo-margin && p < lo+margin) || (p > hi-2*time.Millisecond-margin && p < hi+margin) {
			return 0, 0, false
		}
		if p > lo {
			conns++
			if p < hi {
				errs++
			}
		}
	}
	return errs, conns, true
}

// TestServerURLAndCommand: a server the user runs, reached by URL (its path becomes the
// request path), and any server started by a command given a port, both behind the proxy.
func TestServerURLAndCommand(t *testing.T) {
	t.Parallel()
	need(t, "python3", "node")
	paths := make(chan string, 10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		w.Header().Set("Server", "usersrv/1.2")
		_, _ = w.Write([]byte("ok"))
	}))
	defer ts.Close()
	src := fmt.Sprintf(`
name: own-servers
network: {rtt: 10ms}
load: {requests: 3}
variants:
  - name: url
    server: {url: "%s/health"}
    expect: ["errors == 0", "connections == 1", "proxy_connections == 1"]
  - name: command
    server: {command: "exec python3 -m http.server {port} --bind 127.0.0.1"}
    expect: ["errors == 0", "connections == 3", "server_connections == 3"]
  - name: command-tls
    server:
      tls: true
      command: >-
        exec node -e "const fs = require('fs'); require('https').createServer({cert: fs.readFileSync('{cert}'),
        key: fs.readFileSync('{key}')}, (q, r) => r.end('ok')).listen({port}, '127.0.0.1')"
    expect: ["errors == 0", "connections == 1", "reused_requests == 2"]
`, ts.URL)
	out, err := Execute(context.Background(), plan(t, src), opts(t))
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %+v", r.Variant, r.Status, r.Error, r.Checks)
		}
		// What a program kalab started waited for a core is measured (Linux); a URL's is
		// not kalab's to read (the CPU-pressure rule for real timers).
		if measured := r.Timing.ServerCPUWaitMs != nil; measured != (r.Variant != "url" && runtime.GOOS == "linux") {
			t.Errorf("%s: server_cpu_wait_ms recorded: %v", r.Variant, measured)
		}
		switch r.Variant {
		case "url":
			if r.Server.Kind != "url" || r.Server.Name != "usersrv" || r.Server.Version != "1.2" {
				t.Errorf("url server %+v: want usersrv 1.2 from its Server header", r.Server)
			}
		case "command":
			if r.Server.Kind != "command" || r.Server.Name != "SimpleHTTP" || len(r.Server.Logs) == 0 {
				t.Errorf("command server %+v: want SimpleHTTP and its log", r.Server)
			}
		}
	}
	close(paths)
	for p := range paths {
		if p != "/health" {
			t.Errorf("the URL's server got path %q, want /health", p)
		}
	}
}

// TestCheckPointsAtTheField: what a real server cannot express is reported where the file
// (or its variant) set it, before anything runs.
func TestCheckPointsAtTheField(t *testing.T) {
	t.Parallel()
	p := plan(t, `name: bad
server: {exec: nginx, idle_timeout: 2s}
variants:
  - name: delayed
    server: {response: {delay: 5ms}}
  - name: node-short
    server: {exec: node, idle_timeout: 900ms}
  - name: fine
`)
	var got []string
	for _, d := range Check(p, CheckOptions{}) {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Line, d.Col, d.Path))
	}
	want := []string{"5:32 server.response.delay", "7:40 server.idle_timeout"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("diagnostics at %q, want %q", got, want)
	}
	// At a tenth of the time, Node cannot close at 2 s (200 ms) either.
	if ds := Check(plan(t, "name: scaled\nserver: {exec: node, idle_timeout: 2s}\n"), CheckOptions{TimeScale: 0.1}); len(ds) != 1 {
		t.Errorf("scaled Node: %v, want one diagnostic", ds)
	}
	ds := Check(plan(t, "name: remote\nserver: {url: \"http://192.0.2.1/\"}\n"), CheckOptions{})
	if len(ds) != 1 || ds[0].Path != "server.url" {
		t.Errorf("remote URL: %v, want one diagnostic on server.url", ds)
	}
	if ds := Check(plan(t, "name: remote\nserver: {url: \"http://192.0.2.1/\"}\n"), CheckOptions{AllowRemote: true}); len(ds) != 0 {
		t.Errorf("remote URL with AllowRemote: %v", ds)
	}
}

// TestExamplesLoad: the scenario files in examples/ (its top level; the subdirectories hold
// CI and Kubernetes files) load and pass Check, as the README shows them.
func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples/*.yaml: %v, %v", files, err)
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if ds := Check(p, CheckOptions{}); len(ds) > 0 {
		t.Fatal(ds)
	}
}

// TestNginxHTTP2: nginx serves HTTP/2 over TLS (ALPN) and as h2c with prior knowledge,
// with the stream limit the scenario sets.
func TestNginxHTTP2(t *testing.T) {
	t.Parallel()
	need(t, "nginx")
	p := plan(t, `
name: nginx-h2
network: {rtt: 10ms}
server: {exec: nginx, http: "2", idle_timeout: 2s, http2_max_streams: 8, response: {body_bytes: 5000}}
client: {implementation: go-net-http, max_conns: 1}
load: {requests: 16, concurrency: 4}
variants:
  - name: tls
    server: {tls: true}
  - name: h2c
expect: ["errors == 0", "connections == 1", "server_connections == 1"]
`)
	out, err := Execute(context.Background(), p, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %+v", r.Variant, r.Status, r.Error, r.Checks)
		}
		data, err := os.ReadFile(filepath.Join(out.Dir, r.RequestsFile))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"bytes":5000`) {
			t.Errorf("%s: no request read the 5,000-byte body", r.Variant)
		}
		// nginx's own access log says which protocol it served.
		access, err := os.ReadFile(filepath.Join(out.Dir, report.ServerLogsPath("nginx-h2", r.Variant), "access.log"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(access), `HTTP/2.0" 200 5000`); n != 16+1 { // and the identity probe
			t.Errorf("%s: nginx logged %d HTTP/2 requests, want 16 and the probe:\n%s", r.Variant, n, access)
		}
	}
}

// TestRealServerBehindTheBalancer: real nginx as the balancer's backend. The balancer's
// pool dials nginx through the backend link, whose records are nginx's connections. What
// the plan decides, far from any timer's edge: every pause (300 ms) is well inside the
// balancer's 60 s client idle and nginx's 2 s keepalive_timeout, so one client connection
// and one backend connection carry all 6 requests (5 reused at the backend) and nginx
// closes nothing idle; every pause of 2.6 s outlasts nginx's close by 600 ms, so nginx's FIN
// is at the balancer long before the next burst, its pool drops that connection and opens
// one per burst (3), and each of the first two ends by nginx's idle close (the last one by
// the run's end), while the client keeps its one connection to the balancer.
func TestRealServerBehindTheBalancer(t *testing.T) {
	t.Parallel()
	need(t, "nginx")
	src := `
name: lb-nginx
network: {rtt: 20ms}
server: {exec: nginx, idle_timeout: 2s}
client: {preset: node-agent}
balancer: {preset: aws-alb}
load: {requests: 6, burst: 2, pause: 300ms}
variants:
  - name: reuse
  - name: nginx-closes
    load: {pause: 2.6s}
`
	out, err := Execute(context.Background(), plan(t, src), opts(t))
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	want := map[string]struct{ backends, reused, idleCloses float64 }{
		"reuse":        {1, 5, 0},
		"nginx-closes": {3, 3, 2},
	}
	for _, r := range out.Runs {
		m, w := r.Metrics, want[r.Variant]
		t.Logf("%s: %s; errors %v, connections %v, balancer requests %v, backend connections %v (reused requests %v), server connections %v, server idle closes %v",
			r.Variant, r.Status, m.Errors, m.Connections, m.BalancerRequests, m.BackendConnections, m.BackendReusedRequests, m.ServerConnections, m.ServerIdleCloses)
		if r.Error != "" {
			t.Fatalf("%s: %s", r.Variant, r.Error)
		}
		if m.Requests != 6 || m.Errors != 0 || m.Connections != 1 || m.BalancerRequests != 6 ||
			m.BackendConnections != w.backends || m.BackendReusedRequests != w.reused ||
			m.ServerConnections != w.backends || m.ServerIdleCloses != w.idleCloses {
			t.Errorf("%s: want 6 requests, 0 errors, 1 client connection, 6 balancer requests, %v backend and server connections, %v reused at the backend, %v nginx idle closes",
				r.Variant, w.backends, w.reused, w.idleCloses)
		}
		if r.Server == nil || r.Server.Kind != "nginx" || r.Server.Version == "" {
			t.Errorf("%s: server %+v: want nginx with its version", r.Variant, r.Server)
		}
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Error(err)
	}
}

// TestNginxTLSCountedByModelClient: nginx's TLS state is not kalab's to read, so a model
// client's own count of its handshakes and resumptions is the run's. nginx closes an idle
// connection after 1 s and every request comes 1.5 s after the one before (500 ms clear of
// the close), so each of the 4 opens a new connection: with a session cache the last 3
// resume nginx's tickets, without one none does.
func TestNginxTLSCountedByModelClient(t *testing.T) {
	t.Parallel()
	need(t, "nginx")
	p := plan(t, `
name: nginx-tls-counts
network: {rtt: 10ms}
server: {exec: nginx, tls: true, session_tickets: true, idle_timeout: 1s}
client: {preset: go-default}
load: {requests: 4, burst: 1, pause: 1500ms}
variants:
  - name: cache
    client: {session_resumption: true}
    expect: ["errors == 0", "connections == 4", "tls_handshakes == 4", "tls_resumed == 3"]
  - name: no-cache
    client: {session_resumption: false}
    expect: ["errors == 0", "connections == 4", "tls_handshakes == 4", "tls_resumed == 0"]
`)
	out, err := Execute(context.Background(), p, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	for _, r := range out.Runs {
		if r.Status != report.StatusPass {
			t.Errorf("%s: %s %s %+v", r.Variant, r.Status, r.Error, r.Checks)
		}
	}
}
