package execclient

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// The go-http adapter is built before the run (Identify), once per script and Go version:
// a second Identify finds the same program without building it again, and Run starts that
// program, which speaks the protocol: every request reported once, with the server's
// connection stamps echoed and its planned starts given (no lateness derived by kalab).
// Real net/http against a real TLS server on loopback.
func TestGoHTTPAdapterBuildsOnceAndRuns(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH") // the go command runs this test: never in CI
	}
	var mu sync.Mutex
	next, perConn := 0, map[string]int{}
	connID := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if _, ok := connID[r.RemoteAddr]; !ok {
			next++
			connID[r.RemoteAddr] = next
		}
		perConn[r.RemoteAddr]++
		w.Header().Set("Kalab-Conn", strconv.Itoa(connID[r.RemoteAddr]))
		w.Header().Set("Kalab-Conn-Request", strconv.Itoa(perConn[r.RemoteAddr]))
		mu.Unlock()
		_, _ = w.Write([]byte("hello"))
	}))
	srv.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.StartTLS()
	defer srv.Close()
	caPEM := pemOf(srv.Certificate().Raw)

	a, _ := Lookup("go-http")
	cfg := Config{Adapter: a, URL: srv.URL + "/", CAPEM: caPEM,
		Plan: Plan{Method: "GET", Requests: 6, Concurrency: 1, Burst: 2, PausesMs: []float64{30, 30},
			Client: map[string]any{"keepalive": true}}}
	id, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if id.program == "" || !slices.Equal(id.Command, []string{id.program}) {
		t.Fatalf("identity %+v: want the built program as the command", id)
	}
	st, err := os.Stat(id.program)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(again.program)
	if err != nil {
		t.Fatal(err)
	}
	if again.program != id.program || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("a second Identify built again: %s (%v) after %s (%v)", again.program, st2.ModTime(), id.program, st.ModTime())
	}
	var evs []client.Event
	rep, err := Run(context.Background(), cfg, id, func(ev client.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatalf("%v\n%s", err, rep.Stderr)
	}
	if len(evs) != 6 || rep.Lines != 6 {
		t.Fatalf("%d events, %d lines; want 6", len(evs), rep.Lines)
	}
	for _, ev := range evs {
		// One request at a time, 30 ms pauses against Go's 90 s idle timeout: one
		// connection, reused from the second request on.
		if !ev.OK() || ev.Status != 200 || ev.BytesRead != 5 || ev.ConnID != 1 || ev.Reused != (ev.Seq > 0) {
			t.Errorf("request %d: %+v; want 200, 5 bytes, on connection 1, reused after the first", ev.Seq, ev)
		}
	}
	if len(rep.Late) != 6 || rep.LateDerived != 0 {
		t.Errorf("lateness of %d requests, %d derived by kalab: the program stamps every planned start", len(rep.Late), rep.LateDerived)
	}
}

// The go command finds its toolchain and caches where kalab's does: the variables the
// adapter inherits reach its build and its program, and no other adapter's.
func TestGoHTTPAdapterInheritsGoEnvironment(t *testing.T) {
	t.Setenv("GOCACHE", "/kalab-test/go-build")
	t.Setenv("GOROOT", "/kalab-test/goroot")
	g, _ := Lookup("go-http")
	env := g.childEnv([]string{"GOCACHE=/from/scenario"}, []string{"KALAB_URL=x"})
	for _, want := range []string{"GOCACHE=/from/scenario", "GOROOT=/kalab-test/goroot", "KALAB_URL=x"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %q", want, env)
		}
	}
	p, _ := Lookup("python-requests")
	for _, e := range p.childEnv(nil, nil) {
		if len(e) > 2 && e[:2] == "GO" {
			t.Errorf("python-requests got %s", e)
		}
	}
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Built adapters are kept where only the user can write: the user's cache directory, or
// without one a directory private to this process, never a predictable shared path.
func TestAdapterCacheIsPrivate(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, err := adapterCache()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir == filepath.Join(tmp, "kalab", "adapters") {
		t.Errorf("%s: a predictable path in the shared temporary directory", dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s has mode %v: others can write or read it", dir, st.Mode().Perm())
	}
	if again, _ := adapterCache(); again != dir {
		t.Errorf("a second call gave %s after %s", again, dir)
	}
}

// With concurrency 4, a burst of 4 has 4 requests in flight at once: the server holds each
// response until all 4 have arrived (or 5 s have passed), so a program that starts fewer
// workers than the plan's concurrency shows as fewer at once.
func TestGoHTTPAdapterConcurrency(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH") // the go command runs this test: never in CI
	}
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		if inFlight > most {
			most = inFlight
			if most == 4 {
				close(all)
			}
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	defer srv.Close()
	a, _ := Lookup("go-http")
	cfg := Config{Adapter: a, URL: srv.URL + "/",
		Plan: Plan{Method: "GET", Requests: 8, Concurrency: 4, Burst: 4, PausesMs: []float64{10},
			Client: map[string]any{"keepalive": true}}}
	id, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	rep, err := Run(context.Background(), cfg, id, func(ev client.Event) {
		if ev.OK() {
			n++
		}
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, rep.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 4 || n != 8 {
		t.Errorf("%d requests in flight at most, %d of 8 answered; want 4 at once (concurrency 4) and all 8", most, n)
	}
}
