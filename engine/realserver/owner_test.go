package realserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/proc"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// standIn starts a real python3 http.server on a free loopback port, as a process that took
// the port between freePort and the server's bind would, and returns its port and pid.
func standIn(t *testing.T) (port, pid int) {
	t.Helper()
	need(t, "python3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("python3", "-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1")
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			return port, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the stand-in python3 http.server did not listen within 20 s")
		}
	}
}

// TestPortTakenNamesTheHolder: a process that holds the port kalab chose answers the
// readiness check and the probe; Start must refuse it and name it, for a managed program
// and for a command.
func TestPortTakenNamesTheHolder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the owner of a socket is checked on Linux only (see proc.ListenHolders)")
	}
	cases := []struct {
		name string
		cfg  Config
		prog string
	}{
		{"nginx", Config{Kind: Nginx, IdleTimeout: time.Second}, "nginx"},
		{"command", Config{Kind: Command, Command: "python3 -m http.server {port} --bind 127.0.0.1"}, "python3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			need(t, c.prog)
			port, pid := standIn(t)
			orig := freePort
			freePort = func() (int, error) { return port, nil }
			t.Cleanup(func() { freePort = orig })
			c.cfg.LogDir = t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Start(ctx, c.cfg)
			if err == nil {
				id := s.Identity()
				s.Close()
				t.Fatalf("Start succeeded on a port held by pid %d: recorded as %s %s, Server header %q", pid, id.Name, id.Version, id.ServerHeader)
			}
			var pe *proc.PortError
			if !errors.As(err, &pe) {
				t.Fatalf("want a *proc.PortError, got %v", err)
			}
			want := fmt.Sprintf("port %d on 127.0.0.1 is held by pid %d (python3)", port, pid)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		})
	}
}

// TestOwnedServerPasses: the same check accepts the program's own socket, held by its
// workers too (nginx's master and workers share it).
func TestOwnedServerPasses(t *testing.T) {
	need(t, "nginx")
	s, err := Start(context.Background(), Config{Kind: Nginx, IdleTimeout: time.Second, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if runtime.GOOS == "linux" {
		hs, hidden, err := proc.ListenHolders(s.port)
		if err != nil || hidden != 0 || len(hs) == 0 {
			t.Fatalf("holders %v, hidden %d, err %v", hs, hidden, err)
		}
		if !s.Identity().Verified {
			t.Error("the identity does not say the socket's owner was verified")
		}
	}
}

// TestAnswerNamesTheServer: a program in the server's own process group that answers on its
// port passes the socket owner check; what it answers must still be nginx's. A stand-in
// "nginx" that answers -v as nginx does and serves with python3's http.server is refused,
// naming what answered.
func TestAnswerNamesTheServer(t *testing.T) {
	py := testci.Program(t, "python3")
	// The interpreter itself, not a version manager's shim that needs its own environment.
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	script := filepath.Join(t.TempDir(), "nginx")
	fake := "#!/bin/sh\n" +
		"case \"$1\" in -v) echo 'nginx version: nginx/1.22.1' >&2; exit 0;; esac\n" +
		"port=$(sed -n 's/.*listen 127.0.0.1:\\([0-9]*\\).*/\\1/p' \"$4\" | head -n 1)\n" + // -p DIR -c CONF
		"exec " + strings.TrimSpace(string(out)) + " -m http.server \"$port\" --bind 127.0.0.1\n"
	if err := os.WriteFile(script, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Config{Kind: Nginx, Program: script, IdleTimeout: time.Second, LogDir: t.TempDir()})
	if err == nil {
		id := s.Identity()
		s.Close()
		t.Fatalf("a python3 http.server passed as nginx: recorded as %s %s (verified %v), Server header %q", id.Name, id.Version, id.Verified, id.ServerHeader)
	}
	var ie *IdentityError
	if !errors.As(err, &ie) {
		t.Fatalf("want an *IdentityError, got %v", err)
	}
	if !strings.Contains(err.Error(), `answered with "Server: SimpleHTTP/`) || !strings.Contains(err.Error(), "not nginx") {
		t.Fatalf("error %q does not name what answered", err)
	}
	t.Log(err)
}
