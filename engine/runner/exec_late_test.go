package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/judge"
	"github.com/kalab-dev/kalab/engine/testkit/testci"

	"github.com/kalab-dev/kalab/engine/report"
)

// lateWrapper runs an adapter with its sleeps 150 ms too long, as a real client starved of
// CPU wakes late from its pauses.
const lateWrapper = `import runpy, sys, time
real = time.sleep
time.sleep = lambda s: real(s + 0.15)
runpy.run_path(sys.argv[1], run_name="__main__")
`

// A real client that begins its requests late (here python-requests waking 150 ms late
// from every pause, against a 100 ms distance between the pause and the server's close) is
// a run the machine could not time: flagged noisy, never failed. Its lateness is the
// program source of the run's timing record.
func TestExecProgramLatenessIsNoisy(t *testing.T) {
	realTimeOnly(t)
	t.Parallel()
	if err := exec.Command(testci.Program(t, "python3"), "-c", "import requests").Run(); err != nil {
		testci.Missing(t, "python3's requests module", "Debian package python3-requests")
	}
	dir := t.TempDir()
	adapter, err := os.ReadFile("../execclient/adapters/python-requests.py")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"late.py": []byte(lateWrapper), "python-requests.py": adapter} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// On time, the pauses of 400 ms land each request 100 ms after the server's close at
	// 500 ms (4 errors, as scenarios/truth/python-requests.yaml shows); 150 ms late, after
	// its FIN: no error, and without the program's lateness the check would fail.
	src := `
name: exec-late
network: {rtt: 200ms}
server: {idle_timeout: 500ms, keepalive_hint: false}
load: {requests: 8, burst: 1, pause: 400ms}
client: {exec: {command: [python3, ./late.py, ./python-requests.py]}}
expect: ["errors == 4"]
`
	out, err := Execute(context.Background(), planIn(t, dir, src), opts(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Runs[0]
	if rec.Status == report.StatusFail {
		t.Fatalf("a late client failed its checks instead of being flagged noisy: %+v", rec.Checks)
	}
	if rec.Timing == nil || !rec.Timing.Noisy {
		t.Fatalf("not flagged noisy: status %s %s, timing %+v", rec.Status, rec.Error, rec.Timing)
	}
	if !strings.Contains(rec.Timing.Reason, judge.LateWhat[judge.SrcProgram]) {
		t.Errorf("the noisy reason does not name the program: %s", rec.Timing.Reason)
	}
	src0 := rec.Timing.Sources[judge.SrcProgram]
	if src0.N < 7 || src0.P99 < float64(140*time.Millisecond)/float64(time.Millisecond) {
		t.Errorf("program lateness %+v: want at least the 7 pauses, 150 ms late", src0)
	}
}
