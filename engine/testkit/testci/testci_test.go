package testci

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SkipOrFail, run in a child test process: it skips without CI=true and fails with it,
// except under the race detector, where it skips.
func TestSkipOrFail(t *testing.T) {
	if os.Getenv("TESTCI_CHILD") == "1" {
		SkipOrFail(t, "cannot judge %s here", "this")
		return
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipOrFail$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTCI_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		want := "--- SKIP: TestSkipOrFail"
		if ci == "true" && !raceOn {
			want = "--- FAIL: TestSkipOrFail"
		}
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "cannot judge this here") || (ci == "true" && !raceOn) != (err != nil) {
			t.Errorf("CI=%q: err %v, output:\n%s\nwant %q with the message", ci, err, out, want)
		}
	}
}

// Program, run in a child test process with a PATH that holds nothing: it says the program
// is missing and how to install it, skipping without CI=true and failing with it. A program
// on PATH is found.
func TestProgram(t *testing.T) {
	if os.Getenv("TESTCI_CHILD") == "1" {
		Program(t, "curl")
		t.Fatal("Program returned for a program that is not installed")
	}
	if p := Program(t, "bash"); p == "" {
		t.Fatal("bash not found")
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProgram$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTCI_CHILD=1", "CI="+ci, "PATH="+t.TempDir())
		out, err := cmd.CombinedOutput()
		want := "--- SKIP: TestProgram"
		if ci == "true" && !raceOn {
			want = "--- FAIL: TestProgram"
		}
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "curl is not installed (Debian package curl)") || (ci == "true" && !raceOn) != (err != nil) {
			t.Errorf("CI=%q: err %v, output:\n%s\nwant %q with the message", ci, err, out, want)
		}
	}
}
