package execclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// The runtimes' own error texts and codes, as the adapters report them, map to kalab's
// classes; what no rule knows is other.
func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code, text string
		want       client.ErrorClass
	}{
		{"ECONNRESET", "socket hang up", client.ClassEOF},
		{"ECONNRESET", "read ECONNRESET", client.ClassReset},
		{"UND_ERR_SOCKET", "fetch failed: other side closed", client.ClassEOF},
		{"ECONNRESET", "fetch failed: read ECONNRESET", client.ClassReset},
		{"UND_ERR_SOCKET", "fetch failed: socket error", client.ClassReset},
		{"RemoteDisconnected", "ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote end closed connection without response'))", client.ClassEOF},
		{"ConnectionResetError", "ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))", client.ClassReset},
		{"52", "Empty reply from server", client.ClassEOF},
		{"56", "Recv failure: Connection reset by peer", client.ClassReset},
		{"28", "Operation timed out after 1000 milliseconds", client.ClassTimeout},
		{"TimeoutError", "The operation was aborted due to timeout", client.ClassTimeout},
		{"ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1", client.ClassRefused},
		{"7", "Failed to connect to 127.0.0.1 port 1", client.ClassRefused},
		{"UNABLE_TO_VERIFY_LEAF_SIGNATURE", "unable to verify the first certificate", client.ClassTLS},
		{"60", "SSL certificate problem: self-signed certificate", client.ClassTLS},
		{"ERR_SSL_WRONG_VERSION_NUMBER", "wrong version number", client.ClassTLS},
		{"EOF", `Get "https://127.0.0.1:1/": EOF`, client.ClassEOF},
		{"ECONNRESET", `Get "https://127.0.0.1:1/": read tcp 127.0.0.1:2->127.0.0.1:1: read: connection reset by peer`, client.ClassReset},
		{"TLS", `Get "https://127.0.0.1:1/": remote error: tls: handshake failure`, client.ClassTLS},
		{"EWHATEVER", "something new", client.ClassOther},
		{"", "", client.ClassOther},
	}
	for _, c := range cases {
		if got := Classify(c.code, c.text); got != c.want {
			t.Errorf("Classify(%q, %q) = %q, want %q", c.code, c.text, got, c.want)
		}
	}
}

func TestParseLine(t *testing.T) {
	t.Parallel()
	arrived := time.UnixMilli(1_000_000)
	ev, ok, err := parseLine([]byte(`{"index": 3, "start": 999000.5, "end": 999050.5, "status": 200, "bytes": 200, "conn": 2, "conn_request": "4"}`), arrived)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ev.Seq != 3 || ev.Latency != 50*time.Millisecond || ev.ConnID != 2 || !ev.Reused || !ev.OK() || ev.Attempts != 1 {
		t.Errorf("event %+v", ev)
	}
	// Only latency_ms: the line's arrival is the end.
	ev, _, _ = parseLine([]byte(`{"index": 0, "latency_ms": 12.5, "status": 0, "code": 52, "error": "Empty reply from server"}`), arrived)
	if !ev.Start.Equal(arrived.Add(-12500*time.Microsecond)) || ev.Class != client.ClassEOF || ev.Code != "52" || ev.Error != "Empty reply from server" {
		t.Errorf("event %+v", ev)
	}
	// A failure without text still says something.
	ev, _, _ = parseLine([]byte(`{"index": 1}`), arrived)
	if ev.OK() || ev.Error != "no response" || ev.Latency != 0 {
		t.Errorf("event %+v", ev)
	}
	for _, s := range []string{`{"identity": {"runtime": "x"}}`, `starting...`, ``} {
		if _, ok, err := parseLine([]byte(s), arrived); ok || err != nil {
			t.Errorf("%q: ok %v err %v; want ignored", s, ok, err)
		}
	}
	for _, s := range []string{`{"index": 1, "start": 10, "end": 5}`, `{"index": "x"}`, `{"index": 1,`} {
		if _, _, err := parseLine([]byte(s), arrived); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}

// A program that breaks the protocol or fails ends the run with an error that says how;
// a program that runs too long is killed with its children when the context ends.
func TestRunProtocolErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script, want string
	}{
		{"ok", `for i in 0 1 2; do echo "{\"index\": $i, \"status\": 200}"; done`, ""},
		{"twice", `echo '{"index": 0, "status": 200}'; echo '{"index": 0, "status": 200}'; echo '{"index": 1, "status": 200}'; echo '{"index": 2, "status": 200}'`, "index 0 reported twice"},
		{"short", `echo '{"index": 0, "status": 200}'; echo 'gave up' >&2`, "reported 1 of the plan's 3 requests; its stderr ends: gave up"},
		{"outside", `for i in 0 1 2 3; do echo "{\"index\": $i, \"status\": 200}"; done`, "index 3 is outside the plan's 0..2"},
		{"exit", `echo 'boom' >&2; exit 4`, "exit status 4; its stderr ends: boom"},
		{"plan", `test -s "$KALAB_PLAN" && test "$KALAB_REQUESTS" = 3 && test "$KALAB_PAUSES_S" = "0.250000" && test "$KALAB_CLIENT_TIMEOUT_MS" = 1500 || exit 9
for i in 0 1 2; do echo "{\"index\": $i, \"status\": 200}"; done`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "c.sh"), []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			// Run through sh: exec-ing a file just written races the forks of parallel
			// subtests (ETXTBSY, golang/go#22315).
			cfg := Config{Command: []string{"sh", "./c.sh"}, Dir: dir, URL: "http://127.0.0.1:1/",
				Plan: Plan{Method: "GET", Requests: 3, Concurrency: 1, Burst: 2, PausesMs: []float64{250}, Client: map[string]any{"timeout_ms": 1500.0}}}
			id, err := Identify(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			_, err = Run(context.Background(), cfg, id, func(client.Event) { n++ })
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v", err)
			case c.want == "" && n != 3:
				t.Errorf("%d events", n)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		cfg := Config{Command: []string{"sh", "-c", "sleep 30 & sleep 30; wait"}, Plan: Plan{Requests: 1}}
		id, err := Identify(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := Run(ctx, cfg, id, func(client.Event) {}); err == nil {
			t.Error("no error")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Run returned after %v; the process group should die with the context", d)
		}
	})
}

// Every adapter's script is embedded (a native one, which kalab drives itself, has none),
// and a field it refuses names what it does honour.
func TestAdapters(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		a, _ := Lookup(name)
		if a.Native {
			if a.Script != "" {
				t.Errorf("%s: native, with a script %s", name, a.Script)
			}
			continue
		}
		if b, err := a.script(); err != nil || len(b) == 0 {
			t.Errorf("%s: script %v", name, err)
		}
	}
	a, _ := Lookup("python-requests")
	if why := a.Refuse("hint_max", "600s"); !strings.Contains(why, "honours keepalive, max_conns, max_idle, timeout") {
		t.Errorf("refusal %q", why)
	}
	if why := a.Refuse("idle_timeout", "0s"); why != "" {
		t.Errorf("idle_timeout none refused: %q", why)
	}
	if why := a.Refuse("headers", ""); why != "" {
		t.Errorf("headers refused: %q", why)
	}
}
