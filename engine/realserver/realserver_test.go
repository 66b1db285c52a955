package realserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// need stops a test when a program it runs is missing (testci.Program).
func need(t *testing.T, prog string) {
	t.Helper()
	testci.Program(t, prog)
}

// startBehindProxy starts a real server and a proxy in front of it that records each
// connection's close.
func startBehindProxy(t *testing.T, cfg Config) (*Server, *netsim.Proxy, func() []netsim.ConnRecord) {
	t.Helper()
	cfg.LogDir = t.TempDir()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	var mu sync.Mutex
	var recs []netsim.ConnRecord
	p, err := netsim.Start(netsim.Config{Upstream: s.Addr(), RTT: 10 * time.Millisecond, OnConn: func(r netsim.ConnRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return s, p, func() []netsim.ConnRecord {
		mu.Lock()
		defer mu.Unlock()
		return append([]netsim.ConnRecord(nil), recs...)
	}
}

// oneRequest sends one HTTP/1.1 request through addr and returns the response and the
// connection, still open, so that the server's idle close is what ends it.
func oneRequest(t *testing.T, addr string, tlsOn bool, roots *tls.Config) (*http.Response, net.Conn) {
	t.Helper()
	var c net.Conn
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if tlsOn {
		c = tls.Client(c, roots)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	n, _ := br.Discard(int(resp.ContentLength))
	resp.ContentLength = int64(n)
	return resp, c
}

// TestIdleCloseMatchesConfiguration is the acceptance test: for each real server,
// the idle close the proxy measures on its upstream side matches the configured timeout
// within 50 ms, and the Keep-Alive header is as configured.
func TestIdleCloseMatchesConfiguration(t *testing.T) {
	t.Parallel()
	const tolerance = 50 * time.Millisecond
	cases := []struct {
		name string
		cfg  Config
		// wantIdle is when the server must close: nginx keepalive_timeout 2s; Node
		// keepAliveTimeout 1000 ms closes at 2,002 ms (docs/presets.md); HAProxy
		// timeout http-keep-alive 2s.
		wantIdle time.Duration
		wantHint string
	}{
		{"nginx", Config{Kind: Nginx, IdleTimeout: 2 * time.Second, Hint: "timeout=2", BodyBytes: 200}, 2 * time.Second, "timeout=2"},
		{"nginx-tls-no-hint", Config{Kind: Nginx, TLS: true, IdleTimeout: 2 * time.Second, BodyBytes: 5000}, 2 * time.Second, ""},
		{"node", Config{Kind: Node, IdleTimeout: 2 * time.Second, Hint: "timeout=1", BodyBytes: 200}, 2 * time.Second, "timeout=1"},
		{"node-no-hint", Config{Kind: Node, TLS: true, IdleTimeout: 2 * time.Second, BodyBytes: 200}, 2 * time.Second, ""},
		{"haproxy", Config{Kind: HAProxy, IdleTimeout: 2 * time.Second, BodyBytes: 200}, 2 * time.Second, ""},
		{"haproxy-tls-hint", Config{Kind: HAProxy, TLS: true, IdleTimeout: 2 * time.Second, Hint: "timeout=2", BodyBytes: 200}, 2 * time.Second, "timeout=2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			need(t, string(tc.cfg.Kind))
			s, p, recs := startBehindProxy(t, tc.cfg)
			if id := s.Identity(); id.Version == "" || id.Name != string(tc.cfg.Kind) {
				t.Errorf("identity %+v: want name %s and a version", id, tc.cfg.Kind)
			}
			// A loaded machine can only delay a server's timer, never advance it: up to
			// three attempts, each on a new connection; an early close fails at once, and
			// a configuration that is off fails all three.
			var r netsim.ConnRecord
			for attempt := 1; ; attempt++ {
				resp, c := oneRequest(t, p.Addr(), tc.cfg.TLS, &tls.Config{RootCAs: s.RootCAs(), ServerName: s.ServerName()})
				if resp.StatusCode != 200 || resp.ContentLength != int64(tc.cfg.BodyBytes) {
					t.Errorf("response %d with %d body bytes, want 200 with %d", resp.StatusCode, resp.ContentLength, tc.cfg.BodyBytes)
				}
				if got := resp.Header.Get("Keep-Alive"); got != tc.wantHint {
					t.Errorf("Keep-Alive: %q, want %q", got, tc.wantHint)
				}
				// The client answers the server's FIN with its own, as clients do.
				go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
				// While waiting, measure how late this process's own timers fire, and widen
				// the upper bound by it.
				var lag time.Duration
				deadline := time.Now().Add(5 * time.Second)
				for len(recs()) < attempt && time.Now().Before(deadline) {
					t0 := time.Now()
					time.Sleep(10 * time.Millisecond)
					lag = max(lag, time.Since(t0)-10*time.Millisecond)
				}
				_ = c.Close()
				rs := recs()
				if len(rs) != attempt {
					t.Fatalf("%d connection records after %d requests", len(rs), attempt)
				}
				r = rs[attempt-1]
				if r.ClosedBy != netsim.SideServer || r.Reason != netsim.ReasonIdle {
					t.Fatalf("record %+v: want an idle close by the server", r)
				}
				d := r.Idle - tc.wantIdle
				if d < -tolerance {
					t.Fatalf("the server closed after %v idle, before %v - %v", r.Idle, tc.wantIdle, tolerance)
				}
				if d <= tolerance+lag {
					break
				}
				if attempt == 3 {
					t.Fatalf("the server closed after %v idle, want %v ± %v (+%v of measured timer lag), three times", r.Idle, tc.wantIdle, tolerance, lag)
				}
				t.Logf("attempt %d: closed after %v idle, late; trying again", attempt, r.Idle)
			}
			t.Logf("%s %s: closed after %v idle", s.Identity().Name, s.Identity().Version, r.Idle)
		})
	}
}

// TestLogsKept: the generated configuration and the logs stay in LogDir after Close, and
// nothing is left running.
func TestLogsKept(t *testing.T) {
	t.Parallel()
	need(t, "nginx")
	dir := t.TempDir()
	s, err := Start(context.Background(), Config{Kind: Nginx, IdleTimeout: time.Second, LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"nginx.conf", "error.log", "access.log"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if f == "nginx.conf" && !strings.Contains(string(b), "keepalive_timeout 1000ms;") {
			t.Errorf("nginx.conf lacks the idle timeout:\n%s", b)
		}
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

// TestCheckRefusesWhatAServerCannotExpress: each refusal names the field.
func TestCheckRefusesWhatAServerCannotExpress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg   Config
		field string
	}{
		{Config{Kind: Nginx, IdleTimeout: time.Second, Delay: time.Millisecond}, "Delay"},
		{Config{Kind: Nginx}, "IdleTimeout"},
		{Config{Kind: Nginx, IdleTimeout: time.Second, Hint: "timeout=5, max=100"}, "Hint"},
		{Config{Kind: Node, IdleTimeout: 800 * time.Millisecond}, "IdleTimeout"},
		{Config{Kind: Node, IdleTimeout: 2 * time.Second, HTTP2: true}, "HTTP2"},
		{Config{Kind: HAProxy, IdleTimeout: time.Second, MaxRequests: 10}, "MaxRequests"},
		{Config{Kind: HAProxy, IdleTimeout: time.Second, Delay: time.Second}, "Delay"},
	}
	for _, tc := range cases {
		err := Check(tc.cfg)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Check(%+v) = %v, want a FieldError on %s", tc.cfg, err, tc.field)
		}
	}
	for _, ok := range []Config{
		{Kind: Nginx, IdleTimeout: time.Second, Hint: "timeout=1", MaxRequests: 100, HTTP2: true, TLS: true},
		{Kind: Node, IdleTimeout: 6 * time.Second, Hint: "timeout=5", Delay: time.Second},
		{Kind: Node},
		{Kind: HAProxy, IdleTimeout: time.Second, Hint: "timeout=1"},
		{Kind: URL, URL: "http://127.0.0.1:8080/x"},
		{Kind: Command, Command: "python3 -m http.server {port}"},
	} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%+v) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []Config{
		{Kind: URL, URL: "http://192.0.2.1:8080/"},
		{Kind: URL, URL: "ftp://127.0.0.1/"},
		{Kind: Command, Command: "python3 -m http.server"},
	} {
		if err := Check(bad); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", bad)
		}
	}
	// Every problem at once, not the first.
	err := Check(Config{Kind: HAProxy, IdleTimeout: time.Second, MaxRequests: 3, Delay: time.Second, HTTP2: true})
	if j, ok := err.(interface{ Unwrap() []error }); !ok || len(j.Unwrap()) != 3 {
		t.Errorf("Check with three problems = %v, want all three", err)
	}
	if err := Check(Config{Kind: URL, URL: "http://192.0.2.1:8080/", AllowRemote: true}); err != nil {
		t.Errorf("a remote URL with AllowRemote: %v", err)
	}
}

// TestRelativePaths: kalab run from a directory with a relative --out (the default
// results/) and a relative TMPDIR still starts every real server, since each path handed
// to the program is absolute; nginx would resolve a relative one against its prefix, and
// node and HAProxy against the directory they start in.
func TestRelativePaths(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "tmp")
	for _, tc := range []struct {
		kind Kind
		prog string
	}{{Nginx, "nginx"}, {Node, "node"}, {HAProxy, "haproxy"}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			need(t, tc.prog)
			logDir := filepath.Join("results", "run", "servers", string(tc.kind))
			s, err := Start(context.Background(), Config{Kind: tc.kind, TLS: true, IdleTimeout: 2 * time.Second, BodyBytes: 10, LogDir: logDir})
			if err != nil {
				t.Fatalf("Start with LogDir %q and TMPDIR=tmp: %v", logDir, err)
			}
			resp, c := oneRequest(t, s.Addr(), true, &tls.Config{RootCAs: s.RootCAs(), ServerName: s.ServerName()})
			c.Close()
			if resp.StatusCode != 200 || resp.ContentLength != 10 {
				t.Errorf("got status %d with %d body bytes, want 200 with 10", resp.StatusCode, resp.ContentLength)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, l := range s.Logs() {
				if _, err := os.Stat(l); err != nil {
					t.Errorf("a kept log: %v", err)
				}
			}
		})
	}
}
