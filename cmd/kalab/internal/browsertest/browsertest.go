// Package browsertest drives headless Chromium for the tests that open what kalab draws
// (the HTML report, the sweep's plot and heat map).
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// Chromium finds a headless-capable Chromium. Where there is none the browser test says
// so: it skips on a developer's machine and fails in CI (CI=true), where .ci/preamble
// installs Debian's chromium.
func Chromium(t *testing.T) string {
	t.Helper()
	return testci.Program(t, "chromium", "chromium-browser", "google-chrome")
}

// crashTries is how many times Headless starts Chromium when it dies by a signal: on a
// machine busy with other tests (load 4 on 2 cores) Debian's Chromium 156 was seen to
// segfault while starting, once in about 40 starts. The page is what the test judges; a
// browser that crashed judged nothing, so it is started again, and a third crash fails.
const crashTries = 3

// Headless runs Chromium on a page with the flags that work in a container: no sandbox
// (root), no GPU, no network services, a fresh profile. It returns what Chromium printed.
// A Chromium that exits with an error fails the test; one killed by a signal is started
// again, up to crashTries times, each crash logged.
func Headless(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	for try := 1; ; try++ {
		out, stderr, err := headlessOnce(t, bin, args)
		if err == nil {
			return out
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() && try < crashTries {
			t.Logf("Chromium crashed (%v) on try %d of %d; starting it again", err, try, crashTries)
			continue
		}
		t.Fatalf("%s %v: %v (try %d)\n%s", bin, args, err, try, stderr)
	}
}

// headlessOnce starts Chromium once, with a fresh profile, and returns what it printed.
func headlessOnce(t *testing.T, bin string, args []string) (stdout []byte, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err = cmd.Run(); ctx.Err() != nil {
		err = errors.New("no answer in 2 minutes") // killed by the deadline: not a crash to retry
	}
	return out.Bytes(), errb.String(), err
}
