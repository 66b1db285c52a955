package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --param that names no box of the run's chain is bad input (exit 2), said before
// anything runs: nothing is written under --out.
func TestSweepOfABoxThatIsNotThereExitsTwo(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "nlb-ipvs-pod.yaml")
	for param, want := range map[string]string{
		"middlebox.3.idle_timeout": "--param middlebox.3.idle_timeout: the run's middlebox is a list of 3 boxes; N counts from 0 (the box nearest the client) to 2",
		"middlebox.idle_timeout":   "--param middlebox.idle_timeout: the run's middlebox is a list of 3 boxes (a chain); name one by its place from the client, from 0: --param middlebox.0.idle_timeout to middlebox.2.idle_timeout",
	} {
		out := filepath.Join(t.TempDir(), "out")
		var stdout, stderr bytes.Buffer
		code := Main([]string{"sweep", file, "--run", "nlb-350s", "--param", param, "--range", "5m..30m", "--out", out}, &stdout, &stderr)
		if code != exitInvalid || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", param, code, stderr.String(), exitInvalid, want)
		}
		if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
			t.Errorf("%s: %d entries under --out: something ran", param, len(entries))
		}
	}
}
