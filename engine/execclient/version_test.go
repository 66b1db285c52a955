package execclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// fakeUndici writes package.json of an undici package of version v under dir.
func fakeUndici(t *testing.T, dir, v string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name": "undici", "version": "`+v+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A version finds the first undici package of that release in the list: an npm prefix or
// the package itself, 7 matching 7.30.3 and not 70.1.0; none is missing, not an error,
// and the message says what was found.
func TestFindUndici(t *testing.T) {
	root := t.TempDir()
	six := filepath.Join(root, "six")
	fakeUndici(t, filepath.Join(six, "node_modules", "undici"), "6.24.1")
	seventy := filepath.Join(root, "seventy")
	fakeUndici(t, seventy, "70.1.0")
	seven := filepath.Join(root, "seven")
	fakeUndici(t, filepath.Join(seven, "node_modules", "undici"), "7.30.3")
	dirs := []string{filepath.Join(root, "absent"), six, seventy, seven}
	for _, want := range []string{"7", "7.30", "7.30.3"} {
		dir, v, err := findUndici(want, dirs)
		if err != nil || v != "7.30.3" || dir != filepath.Join(seven, "node_modules", "undici") {
			t.Errorf("%s: %s %s %v; want 7.30.3 in seven/node_modules/undici", want, dir, v, err)
		}
	}
	if dir, v, err := findUndici("6", dirs); err != nil || v != "6.24.1" || !strings.HasPrefix(dir, six) {
		t.Errorf("6: %s %s %v", dir, v, err)
	}
	_, _, err := findUndici("8", dirs)
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "6.24.1 in ") || !strings.Contains(err.Error(), "npm install --prefix DIR undici@8") {
		t.Errorf("8: %v; want ErrMissing naming what is there and how to install it", err)
	}
}

// A go command that did not switch to the toolchain asked for (one older than Go 1.21
// ignores GOTOOLCHAIN) is missing that toolchain: the run is not run, never run with
// another Go.
func TestGoVersionMustBeTheOneAsked(t *testing.T) {
	a, _ := Lookup("go-http")
	cfg := Config{Adapter: a, Version: "go1.22.12"}
	if env := versionEnv(cfg); !slices.Equal(env, []string{"GOTOOLCHAIN=go1.22.12"}) {
		t.Errorf("env %q", env)
	}
	ok := Identity{Version: "go version go1.22.12 linux/amd64"}
	if err := useVersion(cfg, &ok); err != nil {
		t.Errorf("go1.22.12 reported: %v", err)
	}
	other := Identity{Version: "go version go1.20.14 linux/amd64"}
	if err := useVersion(cfg, &other); !errors.Is(err, ErrMissing) {
		t.Errorf("go1.20.14 reported: %v; want ErrMissing", err)
	}
	if env := versionEnv(Config{Adapter: a}); env != nil {
		t.Errorf("no version: env %q", env)
	}
}

// The go-http adapter builds with Go 1.22 (no Transport.Protocols), and the run record's
// version says which Go built it. The toolchain comes from the Go module proxy
// (.ci/preamble fetches it).
func TestGoHTTPAdapterBuildsWithGo122(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH") // the go command runs this test: never in CI
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hi")) }))
	defer srv.Close()
	a, _ := Lookup("go-http")
	cfg := Config{Adapter: a, URL: srv.URL + "/", Version: "go1.22.12",
		Plan: Plan{Method: "GET", Requests: 2, Concurrency: 1, Client: map[string]any{"keepalive": true}}}
	id, err := Identify(context.Background(), cfg)
	if errors.Is(err, ErrMissing) {
		testci.Missing(t, "the go1.22.12 toolchain", fmt.Sprintf("GOTOOLCHAIN=go1.22.12 go version fetches it from the Go module proxy; the probe said: %v", err))
	}
	if err != nil {
		t.Fatal(err)
	}
	if id.Version != "go version go1.22.12 "+strings.Fields(id.Version)[3] {
		t.Errorf("version %q; want go1.22.12's", id.Version)
	}
	n := 0
	rep, err := Run(context.Background(), cfg, id, func(ev client.Event) {
		if ev.OK() {
			n++
		}
	})
	if err != nil || n != 2 {
		t.Fatalf("%d of 2 answered: %v\n%s", n, err, rep.Stderr)
	}
	// http2 needs Transport.Protocols: the Go 1.22 program says so and fails.
	cfg.Plan.Client = map[string]any{"keepalive": true, "http2": "tls"}
	rep, err = Run(context.Background(), cfg, id, func(client.Event) {})
	if err == nil || !strings.Contains(rep.Stderr, "Go 1.24 or later") {
		t.Errorf("http2 under go1.22.12: %v, stderr %q; want the program to refuse it", err, rep.Stderr)
	}
}

// With a version, node-fetch's requests go through the fetch of the undici package found,
// over an Agent of that package given the scenario's options, never through Node's bundled
// fetch: here a stand-in package whose fetch fails, saying what it was given.
func TestNodeFetchImportsTheUndiciFound(t *testing.T) {
	testci.Program(t, "node")
	prefix := t.TempDir()
	pkg := filepath.Join(prefix, "node_modules", "undici")
	fakeUndici(t, pkg, "7.99.0")
	js := `class Agent { constructor(o) { this.o = o; } }
let dispatcher;
module.exports = {
  Agent,
  setGlobalDispatcher(d) { dispatcher = d; },
  fetch: async () => {
    const cause = Object.assign(new Error('stand-in undici, agent ' + JSON.stringify(dispatcher.o)), { code: 'ESTANDIN' });
    throw Object.assign(new TypeError('fetch failed'), { cause });
  },
};
`
	if err := os.WriteFile(filepath.Join(pkg, "index.js"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := Lookup("node-fetch")
	cfg := Config{Adapter: a, URL: "http://127.0.0.1:9/", Version: "7",
		Plan: Plan{Method: "GET", Requests: 1, Concurrency: 1, Client: map[string]any{"keepalive": true, "max_conns": 3}}}
	t.Setenv(EnvUndiciPath, prefix) // kalab's own environment: where Identify looks
	id, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(id.Version, "; fetch from undici 7.99.0 ("+pkg+")") {
		t.Errorf("version %q; want it to name the undici package", id.Version)
	}
	var evs []client.Event
	rep, err := Run(context.Background(), cfg, id, func(ev client.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatalf("%v\n%s", err, rep.Stderr)
	}
	if len(evs) != 1 || evs[0].Code != "ESTANDIN" || !strings.Contains(evs[0].Error, `stand-in undici, agent {"connections":3}`) {
		t.Errorf("events %+v; want the stand-in's error, its Agent given connections 3", evs)
	}
}

// client.http2 reaches Transport.Protocols, which the adapter sets by reflection so that it
// still builds with Go 1.22: tls speaks HTTP/2 to a TLS server that offers it, never does not.
func TestGoHTTPAdapterSetsProtocols(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH") // the go command runs this test: never in CI
	}
	protos := make(chan int, 8)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { protos <- r.ProtoMajor }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	a, _ := Lookup("go-http")
	for _, c := range []struct {
		http2 string
		want  int
	}{{"tls", 2}, {"never", 1}} {
		cfg := Config{Adapter: a, URL: srv.URL + "/", CAPEM: pemOf(srv.Certificate().Raw),
			Plan: Plan{Method: "GET", Requests: 1, Concurrency: 1, Client: map[string]any{"keepalive": true, "http2": c.http2}}}
		id, err := Identify(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), cfg, id, func(client.Event) {})
		if err != nil {
			t.Fatalf("http2 %s: %v\n%s", c.http2, err, rep.Stderr)
		}
		if got := <-protos; got != c.want {
			t.Errorf("http2 %s: the server saw HTTP/%d; want HTTP/%d", c.http2, got, c.want)
		}
	}
}
