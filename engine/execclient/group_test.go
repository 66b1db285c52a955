//go:build linux

package execclient

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
)

// A program that leaves a child behind holding its standard output (sleep 3600 in the
// background) must not hold the run: Run returns once the program itself exits, and the
// child is gone with the program's group.
func TestEscapedChildDoesNotHoldTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "sleep.pid")
	script := `sleep 3600 & echo $! > ` + pidFile + `
echo '{"index": 0, "latency_ms": 1, "status": 200}'
`
	if err := os.WriteFile(filepath.Join(dir, "client.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Command: []string{"sh", "./client.sh"}, Dir: dir, URL: "http://127.0.0.1:1/", Plan: Plan{Requests: 1, Concurrency: 1}}
	id, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg, id, func(client.Event) {})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still waits 10 s after the program exited: its leftover child holds its output")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") || syscall.Kill(pid, 0) != nil {
			return // gone (or a zombie waiting for its new parent)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the program's child sleep 3600 (pid %d) outlived the run", pid)
		}
	}
}
