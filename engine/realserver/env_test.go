package realserver

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/childenv"
)

// A real server sees only the allowlist and the scenario's env:, never a secret of
// kalab's environment: a server.command (sh dumping its environment with env(1), then
// a Node server), and the bundled Node server, read from its /proc/PID/environ (nginx
// writes its process title over that memory). Not parallel: t.Setenv.
func TestServerEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "kalab-test-secret")
	t.Setenv("PASS_ME", "passed")
	t.Run("command", func(t *testing.T) {
		need(t, "node")
		dump := filepath.Join(t.TempDir(), "env.txt")
		server := `node -e "require('http').createServer((q, s) => s.end('ok')).listen({port}, '127.0.0.1')"`
		s, err := Start(context.Background(), Config{Kind: Command, Command: "env > " + dump + "; exec " + server,
			Env: []string{"PASS_ME", "SET_ME=1"}, LogDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		b, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		checkServerEnv(t, strings.Split(strings.TrimSpace(string(b)), "\n"), "PWD")
	})
	t.Run("node", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("reads /proc/PID/environ")
		}
		need(t, "node")
		s, err := Start(context.Background(), Config{Kind: Node, IdleTimeout: 5 * time.Second, Env: []string{"PASS_ME", "SET_ME=1"}, LogDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		checkServerEnv(t, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
	})
}

// checkServerEnv fails for a secret or a variable beyond the allowlist, env: (PASS_ME,
// SET_ME) and extra, and for env: entries missing.
func checkServerEnv(t *testing.T, env []string, extra ...string) {
	t.Helper()
	if slices.Contains(env, "AWS_SECRET_ACCESS_KEY=kalab-test-secret") {
		t.Errorf("a secret of kalab's environment reached the server: %q", env)
	}
	for _, want := range []string{"PASS_ME=passed", "SET_ME=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from the server's environment: %q", want, env)
		}
	}
	allowed := append(append(childenv.Inherited(), "PASS_ME", "SET_ME"), extra...)
	for _, e := range env {
		if name, _, _ := strings.Cut(e, "="); !slices.Contains(allowed, name) {
			t.Errorf("%s is in the server's environment; only %v may be", name, allowed)
		}
	}
}
