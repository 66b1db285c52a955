// Package plantest loads scenario source written inline in a test, as a file on disk, so
// that positions in its diagnostics are those a user would see.
//
// A test kit: the engine's tests and the command line's both use it; it is kalab's own, not
// a stable API for other modules.
package plantest

import (
	"os"
	"path/filepath"
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
