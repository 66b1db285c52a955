package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// The adapters a plan's runs build (go-http) are built before the first run starts, once
// per Go release, never inside a run's timed window. The go command here is the test's own:
// it says which release it is, and its build stamps the time it began and fails. Both runs
// end with the build's error, which names the build and says why; the build ran once, and
// before either run started. Not parallel: it puts its go command first on PATH.
func TestAdaptersAreBuiltBeforeAnyRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test's go command is a shell script")
	}
	bin := t.TempDir()
	stamps := filepath.Join(bin, "builds")
	goCmd := "#!/bin/sh\ncase \"$1\" in\n" +
		"version) echo 'go version go1.26.8 linux/amd64' ;;\n" +
		"build) date +%s%N >>" + stamps + "; echo 'kalab-test: this go builds nothing' >&2; exit 1 ;;\n" +
		"esac\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(goCmd), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := plan(t, "name: built\nload: {requests: 1}\nvariants:\n"+
		"  - {name: a, client: {exec: go-http}}\n  - {name: b, client: {exec: go-http, keepalive: false}}\n")
	out, err := Execute(context.Background(), p, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(stamps)
	if err != nil {
		t.Fatalf("the adapter was never built: %v", err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 1 {
		t.Fatalf("built %d times, want once: %q", len(lines), lines)
	}
	ns, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(out.Runs))
	}
	for _, r := range out.Runs {
		if r.Status != report.StatusError || !strings.Contains(r.Error, "building the go-http adapter (go build -o ") ||
			!strings.Contains(r.Error, "kalab-test: this go builds nothing") {
			t.Errorf("%s: status %s, error %q; want the build's error", r.Variant, r.Status, r.Error)
		}
		if !r.StartedAt.After(timeOfNanos(ns)) {
			t.Errorf("%s started at %v, before the build began at %v", r.Variant, r.StartedAt, timeOfNanos(ns))
		}
	}
}

func timeOfNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }
