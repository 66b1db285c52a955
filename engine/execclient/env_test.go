package execclient

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/internal/childenv"
)

// A client program sees only the allowlist, the scenario's env: and the KALAB_*
// protocol: a secret of kalab's environment (a CI job's) does not reach it. The program
// is real (sh running env(1)) and dumps what it got. Not parallel: t.Setenv.
func TestClientEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "kalab-test-secret")
	t.Setenv("GITHUB_TOKEN", "kalab-test-token")
	t.Setenv("PASS_ME", "passed")
	dir := t.TempDir()
	script := `env > env.txt; echo '{"index": 0, "status": 200}'`
	cfg := Config{Command: []string{"sh", "-c", script}, Dir: dir, URL: "http://127.0.0.1:1/",
		Env:  []string{"PASS_ME", "SET_ME=1"},
		Plan: Plan{Method: "GET", Requests: 1, Concurrency: 1}}
	id, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, id, func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if strings.Contains(env, "kalab-test-secret") || strings.Contains(env, "kalab-test-token") {
		t.Errorf("a secret of kalab's environment reached the client:\n%s", env)
	}
	for _, want := range []string{"PASS_ME=passed", "SET_ME=1", "KALAB_URL=http://127.0.0.1:1/", "KALAB_REQUESTS=1"} {
		if !slices.Contains(strings.Split(env, "\n"), want) {
			t.Errorf("%s missing from the client's environment:\n%s", want, env)
		}
	}
	checkOnlyAllowed(t, env, "PASS_ME", "SET_ME")
}

// checkOnlyAllowed fails for a variable in env (env(1)'s output) that is neither on the
// allowlist, a KALAB_* protocol variable, one of extra, nor PWD, which sh sets itself.
func checkOnlyAllowed(t *testing.T, env string, extra ...string) {
	t.Helper()
	allowed := append(append(childenv.Inherited(), extra...), "PWD")
	for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
		name, _, _ := strings.Cut(line, "=")
		if !slices.Contains(allowed, name) && !strings.HasPrefix(name, "KALAB_") {
			t.Errorf("%s is in the child's environment; only %v and KALAB_* may be", name, allowed)
		}
	}
}

// A program is never handed a target off loopback: Run refuses before starting it.
func TestRunRefusesRemoteTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Config{Command: []string{"sh", "-c", "touch started"}, Dir: dir, URL: "http://192.0.2.1/", Plan: Plan{Requests: 1}}
	id, err := Identify(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), cfg, id, func(client.Event) {})
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("error %v, want the loopback refusal", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "started")); serr == nil {
		t.Error("the program was started")
	}
}
