//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A results file or a sweep baseline that is a named pipe is bad input, said at once: the
// readers used to open it and wait for a writer that never came. Each command runs with a
// deadline; a hang fails the test instead of stalling it.
func TestFIFOReadersExitPromptly(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "reuse.yaml")
	if err := os.WriteFile(scenario, []byte("name: reuse\nload: {requests: 2}\nvariants:\n  - name: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := func(t *testing.T, path string) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name string
		args func(t *testing.T) ([]string, string)
	}{
		{"sweep --baseline", func(t *testing.T) ([]string, string) {
			p := fifo(t, filepath.Join(dir, "sweep", "sweep.jsonl"))
			return []string{"sweep", scenario, "--run", "a", "--param", "client.idle_timeout", "--range", "1s..2s",
				"--out", filepath.Join(dir, "sweepout"), "--baseline", p}, p
		}},
		{"report DIR", func(t *testing.T) ([]string, string) {
			p := fifo(t, filepath.Join(dir, "report", "results.jsonl"))
			return []string{"report", filepath.Dir(p)}, p
		}},
		{"explain DIR", func(t *testing.T) ([]string, string) {
			p := fifo(t, filepath.Join(dir, "explain", "results.jsonl"))
			return []string{"explain", filepath.Dir(p)}, p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, path := tc.args(t)
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- Main(args, &stdout, &stderr) }()
			select {
			case code := <-done:
				if code != exitInvalid {
					t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInvalid, stderr.String())
				}
				if want := path + ": is a named pipe (FIFO), not a regular file"; !strings.Contains(stderr.String(), want) {
					t.Fatalf("stderr does not say %q:\n%s", want, stderr.String())
				}
			case <-time.After(10 * time.Second):
				// Unblock the reader so the goroutine ends with the test.
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatalf("kalab %s still reading the FIFO after 10 s", strings.Join(args, " "))
			}
		})
	}
}
