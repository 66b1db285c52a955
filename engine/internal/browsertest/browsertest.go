// Package browsertest drives headless Chromium for the tests that open what kalab draws
// (the HTML report, the sweep's plot and heat map).
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Chromium finds a headless-capable Chromium. Where there is none the browser test says
// so: it skips on a developer's machine and fails in CI (CI=true), where .ci/preamble
// installs Debian's chromium.
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium on PATH: the browser test did not run (install Debian's chromium; .ci/preamble does)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg) // skip: CI=true fails just above
	return ""
}

// Headless runs Chromium on a page with the flags that work in a container: no sandbox
// (root), no GPU, no network services, a fresh profile. It returns what Chromium printed.
func Headless(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	return stdout.Bytes()
}
