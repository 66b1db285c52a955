package fault

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// TestMutateChild is a subject for TestMutateJudgesEachTest, which runs .ci/mutate with
// KALAB_MUTATE_CHILD set: "noverdict" makes it fail, as a timing test on a busy machine
// does under CI=true, saying it cannot be judged here whenever a fault is on (and pass
// without one); "fails" makes it fail plainly, fault or not. Without the variable it does
// nothing.
func TestMutateChild(t *testing.T) {
	switch os.Getenv("KALAB_MUTATE_CHILD") {
	case "noverdict":
		if os.Getenv("KALAB_FAULT") != "" {
			testci.SkipOrFail(t, "a child that never judges under a fault")
		}
	case "fails":
		t.Error("a child that always fails")
	}
}

// mutate runs .ci/mutate over a faults table of the given lines, with the extra
// environment, and returns its output and whether it exited 0.
func mutate(t *testing.T, table string, env ...string) (string, bool) {
	t.Helper()
	faults := filepath.Join(t.TempDir(), "faults")
	if err := os.WriteFile(faults, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", ".ci", "mutate"))
	cmd.Env = append(os.Environ(), append([]string{"CI=true", "KALAB_FAULTS_FILE=" + faults,
		"KALAB_MUTATE_TESTLOG=", "KALAB_MUTATE_CONTROLS=", "KALAB_FAULT="}, env...)...)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running .ci/mutate: %v", err)
	}
	return string(out), err == nil
}

// wantRow fails t unless out has the table's line for the test under the fault with the
// result.
func wantRow(t *testing.T, out, fault, test, pkg, result string) {
	t.Helper()
	row := regexp.QuoteMeta(fault) + ` +` + regexp.QuoteMeta("go test -run '^"+test+"$' "+pkg) +
		` +[0-9]+ +` + regexp.QuoteMeta(result) + `$`
	if !regexp.MustCompile(`(?m)^` + row).MatchString(out) {
		t.Errorf("no line %s %s %s: %s in the output:\n%s", fault, pkg, test, result, out)
	}
}

// TestMutateJudgesEachTest: .ci/mutate judges each test a guard names on its own. A test
// blind to its fault survives even beside one that sees it, and fails the harness; a
// failure that says it cannot be judged here is run once more and then reported NO
// VERDICT, never caught; a seeing guard alone passes; a test the main test step's log shows
// passing in its own package has its control there, and only there.
func TestMutateJudgesEachTest(t *testing.T) {
	if testci.Race() {
		t.Skip("the harness builds its own test binaries, without the race detector; the plain test pass runs this")
	}
	testci.Program(t, "bash")
	testci.Program(t, "go")
	const netsim, self = "./engine/netsim", "./engine/fault"
	out, ok := mutate(t, "close-undelayed test "+netsim+" ^(TestVirtualFINAlone|TestVirtualFINFollowsData)$\n"+
		"hint-ignored test "+self+" ^TestMutateChild$\n", "KALAB_MUTATE_CHILD=noverdict")
	if ok {
		t.Errorf("a blind guard and one without a verdict: .ci/mutate exited 0:\n%s", out)
	}
	wantRow(t, out, "close-undelayed", "TestVirtualFINAlone", netsim, "caught")
	wantRow(t, out, "close-undelayed", "TestVirtualFINFollowsData", netsim, "SURVIVED")
	wantRow(t, out, "hint-ignored", "TestMutateChild", self, "NO VERDICT (twice: cannot be judged here)")
	if !strings.Contains(out, "TestMutateChild with hint-ignored could not be judged here; running it once more") {
		t.Errorf("the test without a verdict was not run once more:\n%s", out)
	}

	out, ok = mutate(t, "close-undelayed test "+netsim+" ^TestVirtualFINAlone$\n")
	if !ok {
		t.Errorf("a seeing guard: .ci/mutate failed:\n%s", out)
	}
	wantRow(t, out, "close-undelayed", "TestVirtualFINAlone", netsim, "caught")

	// A child that fails with or without the fault: its control fails here, unless the
	// log says it passed in its own package.
	dir := t.TempDir()
	for _, pkg := range []string{"github.com/kalab-dev/kalab/engine/fault", "github.com/kalab-dev/kalab/engine/netsim"} {
		log := filepath.Join(dir, "testlog")
		text := "=== RUN   TestMutateChild\n--- PASS: TestMutateChild (0.00s)\nPASS\nok  \t" + pkg + "\t0.01s\n"
		if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, ok = mutate(t, "hint-ignored test "+self+" ^TestMutateChild$\n", "KALAB_MUTATE_CHILD=fails", "KALAB_MUTATE_TESTLOG="+log)
		if inLog := strings.HasSuffix(pkg, "/fault"); ok != inLog {
			t.Errorf("log of %s: .ci/mutate exited 0: %v, want %v:\n%s", pkg, ok, inLog, out)
		} else if inLog {
			wantRow(t, out, "hint-ignored", "TestMutateChild", self, "caught")
		} else {
			wantRow(t, out, "hint-ignored", "TestMutateChild", self, "CONTROL FAILED (failed without the fault)")
		}
	}
}
