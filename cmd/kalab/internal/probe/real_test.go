package probe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/middlebox"
	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/realserver"
	"github.com/kalab-dev/kalab/engine/scenario/presets"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// These tests probe real programs on loopback in real time. Each runs in parallel with the
// others and is bounded by the probe's own budget (MaxIdle 20 s, Budget 60 s).

// realOpts are the options the real-program tests probe with: gaps up to 20 s.
func realOpts(url string) Options {
	return Options{URL: url, MaxIdle: 20 * time.Second, Budget: 60 * time.Second, MaxRequests: 100}
}

func startReal(t *testing.T, cfg realserver.Config) *realserver.Server {
	t.Helper()
	cfg.LogDir = t.TempDir()
	s, err := realserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.Kind, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// wantText checks that the printed findings hold each of wants.
func wantText(t *testing.T, r *Result, wants ...string) {
	t.Helper()
	var b strings.Builder
	r.Write(&b)
	for _, w := range wants {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the findings lack %q:\n%s", w, b.String())
		}
	}
}

// closedAt checks that the idle close was seen as it happened, by kind, within tol of want
// either way (the server's timer starts when it has written the response, a little before
// the probe has read it).
func closedAt(t *testing.T, r *Result, want time.Duration, kind string, tol time.Duration) {
	t.Helper()
	id := r.Idle
	if !id.Found || id.Kind != kind || id.Low < want-tol || id.High > want+tol {
		testci.TimingMiss(t, "idle close %+v; want %s seen within [%s, %s]", id, kind, want-tol, want+tol)
	}
}

// TestNginx: keepalive_timeout 7s; keepalive_requests 50 is measured as a 7 s close by
// FIN, 50 requests a connection, no hint, HTTP/1.1, in under 30 s.
func TestNginx(t *testing.T) {
	t.Parallel()
	testci.Program(t, "nginx", "/usr/sbin/nginx")
	s := startReal(t, realserver.Config{Kind: realserver.Nginx, IdleTimeout: 7 * time.Second, MaxRequests: 50})
	r, err := Run(context.Background(), realOpts("http://"+s.Addr()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	closedAt(t, r, 7*time.Second, KindFIN, DefaultResolution)
	if !r.Requests.Found || r.Requests.Max != 50 {
		t.Errorf("requests %+v; want max 50", r.Requests)
	}
	if r.Hint.Raw != "" || r.Proto != "HTTP/1.1" {
		t.Errorf("hint %q, proto %q; want none, HTTP/1.1", r.Hint.Raw, r.Proto)
	}
	if r.Elapsed > 30*time.Second {
		t.Errorf("took %s; want under 30 s", r.Elapsed)
	}
	wantText(t, r, "idle, closed by FIN", "hint:         none (no Keep-Alive header)", "max 50 per connection (response 50 said Connection: close)", "protocols:    HTTP/1.1,")
	// The measurement, written as a scenario, loads and reproduces its race on the
	// virtual clock (runWritten fails on any check that does not hold).
	runWritten(t, r, "go-default")
}

// TestNginxHint: keepalive_timeout 7s 5s sends timeout=5, which understates the real 7 s;
// over TLS with HTTP/2 on, h2 is chosen by ALPN, closes idle at 7 s as well, and
// keepalive_requests 50 ends an HTTP/2 connection with a GOAWAY after 50 streams.
func TestNginxHint(t *testing.T) {
	t.Parallel()
	testci.Program(t, "nginx", "/usr/sbin/nginx")
	s := startReal(t, realserver.Config{Kind: realserver.Nginx, IdleTimeout: 7 * time.Second, Hint: "timeout=5", TLS: true, HTTP2: true, MaxRequests: 50})
	o := realOpts("https://" + s.Addr() + "/")
	o.RootCAs, o.ServerName = s.RootCAs(), s.ServerName()
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	closedAt(t, r, 7*time.Second, KindFIN, DefaultResolution)
	if r.Hint.Raw != "timeout=5" || r.Hint.Timeout != 5*time.Second || r.HintVerdict() != "understates" {
		t.Errorf("hint %+v, verdict %q; want timeout=5, understates", r.Hint, r.HintVerdict())
	}
	if !r.H2.Offered || r.TLSVersion != "TLS 1.3" {
		t.Errorf("HTTP/2 %v, TLS %q; want h2 by ALPN over TLS 1.3", r.H2.Offered, r.TLSVersion)
	}
	// Over HTTP/2 nginx (1.19.7 and later) closes an idle connection at keepalive_timeout
	// too, with a GOAWAY just before its FIN; http2_max_concurrent_streams is 128 by
	// default (ngx_http_v2_module docs).
	h2 := r.H2
	near := func(d time.Duration) bool {
		return d >= 7*time.Second-DefaultResolution && d <= 7*time.Second+DefaultResolution
	}
	if !h2.Found || h2.Kind != KindFIN || !near(h2.Close) || !near(h2.GoAway) || h2.MaxStreams != 128 {
		testci.TimingMiss(t, "HTTP/2 %+v; want GOAWAY and FIN at 7 s within %s, 128 streams", h2, DefaultResolution)
	}
	// keepalive_requests 50 bounds HTTP/2 streams as well (nginx 1.19.7 and later): GOAWAY
	// after the 50th, as after the 50th HTTP/1.1 response.
	if r.H2Streams != (H2Streams{Found: true, Max: 50, Sent: 50}) || r.Requests.Max != 50 {
		t.Errorf("HTTP/2 streams %+v, HTTP/1.1 requests %+v; want GOAWAY after 50, Connection: close after 50", r.H2Streams, r.Requests)
	}
}

// TestNodeDefault: Node's http.Server as shipped (keepAliveTimeout 5000, which the
// realserver script leaves alone) closes an idle socket 1 s after it: nodejs/node
// lib/_http_server.js resOnFinish calls socket.setTimeout(keepAliveTimeout +
// keepAliveTimeoutBuffer), the buffer 1000 by default (a fixed
// HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER of 1000 in Node 20). It sends timeout=5, and the
// probe measures what the node server preset models (idle_timeout 6s, keepalive_hint 5s).
func TestNodeDefault(t *testing.T) {
	t.Parallel()
	testci.Program(t, "node")
	s := startReal(t, realserver.Config{Kind: realserver.Node, IdleTimeout: 6 * time.Second, Hint: "timeout=5"})
	r, err := Run(context.Background(), realOpts("http://"+s.Addr()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	var preset struct {
		Idle time.Duration `yaml:"idle_timeout"`
		Hint time.Duration `yaml:"keepalive_hint"`
	}
	if err := presets.Server["node"].Decode(&preset); err != nil {
		t.Fatal(err)
	}
	closedAt(t, r, preset.Idle, KindFIN, DefaultResolution)
	if r.Hint.Timeout != preset.Hint || r.HintVerdict() != "understates" {
		t.Errorf("hint %+v (%s); want the node preset's %s, understating the close", r.Hint, r.HintVerdict(), preset.Hint)
	}
	wantText(t, r, "hint:         Keep-Alive: timeout=5; understates the measured close")
	if r.Requests.Found {
		t.Errorf("requests %+v; Node's maxRequestsPerSocket is unlimited by default", r.Requests)
	}
	runWritten(t, r, "node-agent")
}

// TestSilentDrop: a server that never closes idle connections, behind a box that forgets
// flows idle for 3 s and drops what comes after: a silent drop after about 3 s, found by
// bisection to the resolution, and not a server close.
func TestSilentDrop(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	box, err := middlebox.Start(middlebox.Config{Upstream: srv.Addr(), IdleTimeout: 3 * time.Second, Action: middlebox.Drop})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = box.Close() })
	o := realOpts("http://" + box.Addr() + "/")
	o.MaxIdle, o.RequestTimeout = 8*time.Second, time.Second
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	id := r.Idle
	res := r.Options.Resolution
	if !id.Found || id.Kind != Silent || id.Next != KindTimeout || id.High-id.Low > res ||
		id.Low < 3*time.Second-res || id.High > 3*time.Second+res {
		testci.TimingMiss(t, "idle %+v; want a silent drop (timeout on the next request) bracketed within %s of 3 s", id, res)
	}
	wantText(t, r, "idle close:   silent drop after about 3.", "forgot the flow, not a server timeout")
}

// TestHAProxy: HAProxy's "timeout http-keep-alive 4s" (the realserver configuration
// answers from HAProxy itself, with a Keep-Alive: timeout=4 header it adds) is measured as
// a 4 s close that the hint matches, and no request limit (HAProxy has none per frontend
// connection).
func TestHAProxy(t *testing.T) {
	t.Parallel()
	testci.Program(t, "haproxy", "/usr/sbin/haproxy")
	s := startReal(t, realserver.Config{Kind: realserver.HAProxy, IdleTimeout: 4 * time.Second, Hint: "timeout=4", BodyBytes: 200})
	o := realOpts("http://" + s.Addr() + "/")
	o.MaxRequests = 60
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	closedAt(t, r, 4*time.Second, KindFIN, DefaultResolution)
	if r.HintVerdict() != "matches" || r.Requests.Found {
		t.Errorf("hint %q (%s), requests %+v; want timeout=4 matching, no limit within 60", r.Hint.Raw, r.HintVerdict(), r.Requests)
	}
}

// TestGoServer: Go's net/http server (kalab's embedded server) with IdleTimeout 3 s, on
// loopback in real time: a 3 s close by FIN.
func TestGoServer(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(server.Config{IdleTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	r, err := Run(context.Background(), realOpts("http://"+srv.Addr()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	closedAt(t, r, 3*time.Second, KindFIN, DefaultResolution)
}

// TestBehindLink: Go's server (IdleTimeout 3 s) behind kalab's link with a 20 ms round
// trip, in real time: the probe reads the round trip from the requests on a warm
// connection (the link's proxy accepts the TCP connection itself, so the connect does not
// show it) and the close still at 3 s.
func TestBehindLink(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(server.Config{IdleTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	link, err := netsim.Start(netsim.Config{Upstream: srv.Addr(), RTT: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	o := realOpts("http://" + link.Addr() + "/")
	o.MaxRequests = 20
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	closedAt(t, r, 3*time.Second, KindFIN, DefaultResolution)
	if r.RTT < 20*time.Millisecond || r.RTT > 20*time.Millisecond+DefaultResolution {
		testci.TimingMiss(t, "RTT %s (connect %s, warm request %s); want 20 ms within %s", r.RTT, r.ConnectRTT, r.RequestRTT, DefaultResolution)
	}
}
