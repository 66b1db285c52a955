//go:build unix

package realserver

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/server"
)

// TestNginxDrainIsQuit: a drain at a time is nginx -s quit (SIGQUIT): nginx closes the idle
// keep-alive connection, refuses the next connect (it listens on nothing), and its master
// exits on its own; Close then finds it gone, returns no error and leaves no process of
// its group behind.
func TestNginxDrainIsQuit(t *testing.T) {
	t.Parallel()
	need(t, "nginx")
	cfg := Config{Kind: Nginx, IdleTimeout: 60 * time.Second, LogDir: t.TempDir(),
		Events: []server.Event{{Kind: server.EventDrain, At: 100 * time.Millisecond}}}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = s.Close()
		}
	})
	resp, c := oneRequest(t, s.Addr(), false, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s.ArmEvents(time.Now(), &lag.Recorder{})
	// The idle connection ends (nginx's worker closes it on quit): EOF, well before the
	// 60 s keepalive_timeout.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection after the drain: read %d bytes, %v; want EOF", n, err)
	}
	_ = c.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("nginx's master did not exit within 10 s of the quit")
	}
	if s.waitErr != nil {
		t.Errorf("nginx exited with %v, want status 0", s.waitErr)
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("connect after the drain: %v, want ECONNREFUSED", err)
	}
	pgid := s.ProcessGroup()
	closed = true
	if err := s.Close(); err != nil {
		t.Errorf("Close after nginx quit: %v", err)
	}
	// The group's watcher (engine/internal/proc) kills what is left of the group, itself
	// included, once Close releases it: a moment after Close returns.
	var err2 error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err2 = syscall.Kill(-pgid, 0); errors.Is(err2, syscall.ESRCH) {
			return
		}
	}
	t.Errorf("nginx's process group %d 5 s after Close: %v, want none left (ESRCH)", pgid, err2)
}
