//go:build unix

package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOIsRefusedWithoutBlocking: a scenario path or a load.replay path that is a named
// pipe is bad input, said at once: opening a FIFO would block until something writes to it.
func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"s.yaml", "access.log"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	replay := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(replay, []byte("name: r\nload: {replay: access.log}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "s.yaml"): "is not a regular file",
		replay:                       "access.log is not a regular file",
	} {
		done := make(chan error, 1)
		go func() { _, err := LoadFiles([]string{path}); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", filepath.Base(path), err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the load still blocks after 10 s on a named pipe", filepath.Base(path))
		}
	}
}
