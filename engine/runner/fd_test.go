//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// TestInheritedDescriptorsNeverBecomeRequestErrors starts a child process that inherits
// 3,000 open descriptors and a limit of 3,600: a run of 200 connections at once does not fit
// in what is left and must end as an engine error before it starts, never as resets or
// refused connects; a small run beside it still runs and passes.
func TestInheritedDescriptorsNeverBecomeRequestErrors(t *testing.T) {
	if os.Getenv("KALAB_FD_CHILD") == "1" {
		fdChild(t)
		return
	}
	t.Parallel()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	extra := make([]*os.File, 3000)
	for i := range extra {
		extra[i] = devnull
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInheritedDescriptorsNeverBecomeRequestErrors$", "-test.v")
	cmd.Env = append(os.Environ(), "KALAB_FD_CHILD=1")
	cmd.ExtraFiles = extra
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD OK") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func fdChild(t *testing.T) {
	lim := syscall.Rlimit{Cur: 3600, Max: 3600}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir("/proc/self/fd"); len(ents) < 3000 {
		n := len(ents)
		t.Fatalf("only %d descriptors open; the parent passed 3,000", n)
	}
	p := plan(t, `
name: fds
network: {rtt: 2ms}
load: {requests: 200, concurrency: 200}
variants:
  - name: burst
    expect: ["errors == 0"]
  - name: small
    load: {requests: 5, concurrency: 1}
    expect: ["errors == 0"]
`)
	o := opts(t)
	out, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Runs {
		b, _ := json.Marshal(r.Metrics.ErrorsByClass)
		t.Logf("%s: %s %s errors %s", r.Variant, r.Status, r.Error, b)
		if r.Metrics.Errors != 0 {
			t.Errorf("%s: %v request errors: the descriptor shortage leaked into the measurement", r.Variant, r.Metrics.Errors)
		}
		switch r.Variant {
		case "burst":
			if r.Status != report.StatusError || !strings.Contains(r.Error, "already open") || r.Metrics.Requests != 0 {
				t.Errorf("burst: status %s, %v requests, error %q; want an engine error before it starts", r.Status, r.Metrics.Requests, r.Error)
			}
		case "small":
			if r.Status == report.StatusError && !(r.Timing != nil && r.Timing.Noisy) {
				t.Errorf("small: %s %s", r.Status, r.Error)
			}
		}
	}
	if !out.Errored() {
		t.Error("a run without its descriptors must make the invocation an engine error (exit 3)")
	}
	if !t.Failed() {
		t.Log("CHILD OK")
	}
}
