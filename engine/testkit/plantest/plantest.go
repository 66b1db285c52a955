// Package plantest loads scenario source written inline in a test, as a file on disk, so
// that positions in its diagnostics are those a user would see.
//
// A test kit: the engine's tests and the command line's both use it; it is kalab's own, not
// a stable API for other modules.
package plantest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// Load writes src as one scenario file in a temporary directory and loads it; a load
// error fails the test.
func Load(t testing.TB, src string) *scenario.Plan {
	t.Helper()
	return LoadIn(t, t.TempDir(), src)
}

// LoadIn writes src as dir/s.yaml, beside the files a test put there (a recording, a
// script), and loads it; a load error fails the test.
func LoadIn(t testing.TB, dir, src string) *scenario.Plan {
	t.Helper()
	f := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := scenario.LoadFiles([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// OnlyRun is the one run of p; a plan with more fails the test.
func OnlyRun(t testing.TB, p *scenario.Plan) *scenario.Run {
	t.Helper()
	if len(p.Scenarios) != 1 || len(p.Scenarios[0].Runs) != 1 {
		t.Fatalf("plan has %d scenarios; want one run", len(p.Scenarios))
	}
	return p.Scenarios[0].Runs[0]
}

// Bundled is the path of the bundled suite's file name (scenarios/NAME).
func Bundled(name string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "..", "scenarios", name)
}
