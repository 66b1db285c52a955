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
