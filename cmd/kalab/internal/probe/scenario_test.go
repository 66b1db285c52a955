package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/validate"
	"github.com/kalab-dev/kalab/engine/middlebox"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/server"
)

// runWritten writes r's scenario with preset, loads it as kalab validate does and runs it
// as kalab run does; every run must be on the virtual clock. It returns the runs by variant.
func runWritten(t *testing.T, r *Result, preset string) (string, map[string]*report.Run) {
	t.Helper()
	var b strings.Builder
	if err := r.WriteScenario(&b, preset); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "probe.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, _, err := validate.Load([]string{file}, runner.CheckOptions{})
	if err != nil {
		t.Fatalf("kalab validate rejects the written file: %v\n%s", err, b.String())
	}
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: t.TempDir(), KalabVersion: "probe-test", Log: zerolog.Nop(), Parallel: 1, SkipRequests: true, Host: runner.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]*report.Run{}
	for _, rec := range out.Runs {
		runs[rec.Variant] = rec
		if rec.Clock != "virtual" || rec.Status == report.StatusError {
			t.Errorf("%s: clock %q status %s (%s); want a run on the virtual clock", rec.Variant, rec.Clock, rec.Status, rec.Error)
		}
		for _, c := range rec.Checks {
			if !c.Pass {
				t.Errorf("%s: %s failed (%s)\n%s", rec.Variant, c.Expr, report.Observed(c.Observed), b.String())
			}
		}
	}
	return b.String(), runs
}

// TestWrittenFINRace: the probe of a 7 s FIN close behind kalab's link with a 100 µs
// round trip (the order of loopback's) writes a file whose race variant puts exactly one
// request into the closing connection, whose safe variant puts none, and Go's default
// client (which keeps idle connections 90 s and re-sends a GET that met a closed
// connection) re-sends it.
func TestWrittenFINRace(t *testing.T) {
	var r *Result
	synctest.Test(t, func(t *testing.T) {
		cfg := server.Config{IdleTimeout: 7 * time.Second, MaxRequests: 50, Hint: server.HintDuration, HintDuration: 5 * time.Second}
		r = virtualProbeLink(t, cfg, nil, 100*time.Microsecond, Options{})
	})
	src, runs := runWritten(t, r, "go-default")
	for _, want := range []string{"idle_timeout: 7s # measured ", "keepalive_hint: \"timeout=5, max=50\"", "max_requests: 50 # measured ", "rtt: 100us", "pause: 6999950us", "idle_timeout: 6999ms"} {
		if !strings.Contains(src, want) {
			t.Errorf("the file lacks %q:\n%s", want, src)
		}
	}
	if m := runs["go-default"].Metrics; m.FailedAttempts != 1 || m.HiddenRetries != 1 || m.Errors != 0 {
		t.Errorf("go-default as shipped: failed attempts %v, hidden retries %v, errors %v; want 1, 1, 0", m.FailedAttempts, m.HiddenRetries, m.Errors)
	}
}

// TestWrittenSilentDrop: the probe of a silent 3 s drop writes a middlebox that drops idle
// flows at the bracket's middle, and a server that never closes; the race variant's second
// request goes unanswered until the client's timeout.
func TestWrittenSilentDrop(t *testing.T) {
	var r *Result
	synctest.Test(t, func(t *testing.T) {
		box := &middlebox.Config{IdleTimeout: 3 * time.Second, Action: middlebox.Drop}
		r = virtualProbe(t, server.Config{}, box, Options{MaxIdle: 8 * time.Second, RequestTimeout: time.Second})
	})
	src, runs := runWritten(t, r, "node-agent")
	if !strings.Contains(src, "on_expiry: drop") || !strings.Contains(src, "idle_timeout: none") {
		t.Errorf("the file does not model a box's silent drop:\n%s", src)
	}
	if m := runs["race"].Metrics; m.Errors != 1 || m.ErrorsByClass.Timeout != 1 {
		t.Errorf("race: errors %v (timeouts %v); want the one request after the drop timed out", m.Errors, m.ErrorsByClass.Timeout)
	}
}

// TestWrittenTLS: a server probed over TLS 1.3 that offers h2 is written as a TLS server
// run over HTTP/1.1 (the protocol of the race), with node-agent as the client; its race
// and safe variants hold on the virtual clock.
func TestWrittenTLS(t *testing.T) {
	var r *Result
	synctest.Test(t, func(t *testing.T) {
		cfg := server.Config{TLS: true, HTTP2: true, IdleTimeout: 4 * time.Second}
		r = virtualProbeLink(t, cfg, nil, 2*time.Millisecond, Options{MaxRequests: 10})
	})
	src, _ := runWritten(t, r, "node-agent")
	for _, want := range []string{"tls: true # measured 2000-01-01 on 127.0.0.1: served over TLS 1.3", `http: "1.1" # measured `, "preset: node-agent", "rtt: 2ms", "idle_timeout: 4s # measured"} {
		if !strings.Contains(src, want) {
			t.Errorf("the file lacks %q:\n%s", want, src)
		}
	}
}
