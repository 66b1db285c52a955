package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReleaseBinaryIgnoresTestFault: KALAB_TEST_FAULT crashes a run only in the test
// binary the command-line tests run as kalab (crash.txtar); a kalab built with go build runs
// the same two-run file to the end and exits 0 with the variable set.
func TestReleaseBinaryIgnoresTestFault(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kalab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "two.yaml")
	src := "name: two\nload: {requests: 2}\nvariants:\n  - name: a\n  - name: b\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fault := range []string{"panic", "sigkill"} {
		cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "out-"+fault), "--no-requests", "--log-level", "warn")
		cmd.Env = append(os.Environ(), "KALAB_TEST_FAULT="+fault)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "crash") {
			t.Errorf("KALAB_TEST_FAULT=%s with a release build: %v\n%s", fault, err, out)
		}
	}
}
