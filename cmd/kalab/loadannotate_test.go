package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrorAnnotated: on GitHub Actions a scenario that does not load is annotated on
// its line (and without Actions it is not), for run and validate alike.
func TestLoadErrorAnnotated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(file, []byte("name: bad\nserver:\n  idle_timeout: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_WORKSPACE", dir)
	for _, cmd := range []string{"validate", "run"} {
		for _, actions := range []string{"true", ""} {
			t.Setenv("GITHUB_ACTIONS", actions)
			var out bytes.Buffer
			code := Main([]string{cmd, file}, &out, &out)
			if code != exitInvalid {
				t.Fatalf("%s: exit %d, want %d:\n%s", cmd, code, exitInvalid, out.String())
			}
			ann := "::error file=bad.yaml,line=3,col=17,title=kalab%3A invalid scenario::server.idle_timeout: "
			if got := strings.Contains(out.String(), ann); got != (actions == "true") {
				t.Errorf("%s with GITHUB_ACTIONS=%q: annotation %q present %v:\n%s", cmd, actions, ann, got, out.String())
			}
		}
	}
}
