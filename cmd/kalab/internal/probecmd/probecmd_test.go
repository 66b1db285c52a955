package probecmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/validate"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/server"
)

// TestProbeWrites: kalab probe against the embedded server on loopback (a 400 ms idle
// close, a hint of timeout=1 that overstates it, 5 requests a connection) prints each
// finding and writes a scenario kalab validate accepts with the measured values.
func TestProbeWrites(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(server.Config{IdleTimeout: 400 * time.Millisecond, MaxRequests: 5, Hint: server.HintDuration, HintDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	file := filepath.Join(t.TempDir(), "probe.yaml")
	var out, errb strings.Builder
	code := Main([]string{"http://" + srv.Addr() + "/", "--max-idle", "2s", "--budget", "20s", "--write", file, "--client", "node-agent"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"closed by FIN", "Keep-Alive: timeout=1, max=5; overstates the measured close", "max 5 per connection (response 5 said Connection: close)", "wrote " + file} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := validate.Load([]string{file}, runner.CheckOptions{}); err != nil {
		t.Fatalf("kalab validate rejects the written file: %v\n%s", err, src)
	}
	for _, want := range []string{"preset: node-agent", "max_requests: 5 # measured ", `keepalive_hint: "timeout=1, max=5" # measured `} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the file lacks %q:\n%s", want, src)
		}
	}
}

// TestProbeNoModel: a server that never closes within --max-idle is "above" it, never a
// number, and --write has no close to model: exit 3 with why.
func TestProbeNoModel(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	file := filepath.Join(t.TempDir(), "probe.yaml")
	var out, errb strings.Builder
	code := Main([]string{"http://" + srv.Addr() + "/", "--max-idle", "500ms", "--max-requests", "10", "--write", file}, &out, &errb)
	if code != exitEngine || !strings.Contains(errb.String(), "no idle close was measured") {
		t.Errorf("exit %d, stderr %q; want 3, no idle close", code, errb.String())
	}
	if !strings.Contains(out.String(), "not seen: connections were still open after 500ms idle (above 500ms)") || !strings.Contains(out.String(), "not seen: above 10") {
		t.Errorf("output:\n%s", out.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a file was written: %v", err)
	}
}
