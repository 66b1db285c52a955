package execclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A build that outlasts its limit ends with an error that names the build (the adapter, the
// Go release and the command) and the limit; it is not tried again in this process, and an
// Identify after it gets the same error at once. The go command is the test's own, whose
// build hangs. Not parallel: it sets PATH and the limit.
func TestBuildOverItsLimitIsNamedAndNotRetried(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test's go command is a shell script")
	}
	bin := t.TempDir()
	goCmd := "#!/bin/sh\ncase \"$1\" in\nversion) echo 'go version go1.22.12 linux/amd64' ;;\nbuild) echo x >>" +
		filepath.Join(bin, "builds") + "; exec sleep 30 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(goCmd), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	defer func(d time.Duration) { buildTimeout = d }(buildTimeout)
	buildTimeout = 300 * time.Millisecond

	a, _ := Lookup("go-http")
	cfg := Config{Adapter: a, Version: "go1.22.12"}
	_, err := Identify(context.Background(), cfg)
	if err == nil || errors.Is(err, ErrMissing) ||
		!strings.HasPrefix(err.Error(), "building the go-http adapter (GOTOOLCHAIN=go1.22.12 go build -o ") ||
		!strings.Contains(err.Error(), "did not finish within 300ms: it runs once, before any run starts") {
		t.Fatalf("Identify: %v", err)
	}
	start := time.Now()
	if _, again := Identify(context.Background(), cfg); again == nil || again.Error() != err.Error() || time.Since(start) > 5*time.Second {
		t.Errorf("a second Identify: %v after %v; want the same error at once", again, time.Since(start))
	}
	if b, _ := os.ReadFile(filepath.Join(bin, "builds")); strings.Count(string(b), "x") != 1 {
		t.Errorf("built %d times, want once", strings.Count(string(b), "x"))
	}
}
