package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// pathWithout returns a PATH holding only the programs named (links to the real ones), so
// that every other program, curl among them, is not installed as far as kalab can tell.
func pathWithout(t *testing.T, keep ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range keep {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The truth file for curl on a machine without curl: its real runs are not run, with the
// reason and how to install curl; the compare checks that read them are not evaluated
// (never "2/2 pass"); the exit code is 3, and --allow-missing takes that back; with
// --baseline --fail-missing the runs not run are missing (exit 1).
func TestCurlOffPathIsNotRunAndFailsTheExitCode(t *testing.T) {
	t.Setenv("PATH", pathWithout(t, "bash"))
	file, base := "../../scenarios/truth/curl.yaml", "../../results/baseline.jsonl"
	run := func(args ...string) (int, string, string, *report.Results) {
		t.Helper()
		out := t.TempDir()
		var stdout, stderr strings.Builder
		args = append([]string{"run", "--allow-exec=bundled", "--out", out, "--no-requests", "--lag-tolerance", "0"}, args...)
		code := Main(append(args, file), &stdout, &stderr)
		res, err := report.ReadFile(filepath.Join(out, "latest", "results.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if err := report.ValidateRunDir(filepath.Join(out, "latest")); err != nil {
			t.Error(err)
		}
		return code, stdout.String(), stderr.String(), res
	}

	code, stdout, stderr, res := run()
	if code != exitEngine {
		t.Errorf("exit %d; want %d (a run not run has no verdict)\n%s\n%s", code, exitEngine, stdout, stderr)
	}
	for _, r := range res.Runs {
		real := strings.HasPrefix(r.Variant, "real-")
		if real && (r.Status != report.StatusNotRun || !strings.Contains(r.Reason, "curl") || !strings.Contains(r.Reason, "apt-get install curl")) {
			t.Errorf("%s: status %s, reason %q; want not-run naming curl and how to install it", r.Variant, r.Status, r.Reason)
		}
	}
	if len(res.Scenarios) != 1 || res.Scenarios[0].Status != report.StatusNotEvaluated {
		t.Fatalf("scenario records %+v; want one, not-evaluated", res.Scenarios)
	}
	for _, c := range res.Scenarios[0].Checks {
		if c.Pass || c.Verdict() != report.VerdictNotEvaluated || !strings.Contains(c.NotEvaluated, "did not run") {
			t.Errorf("compare %s: pass %v, verdict %s, %q; want not evaluated, never passed", c.Expr, c.Pass, c.Verdict(), c.NotEvaluated)
		}
	}
	for _, want := range []string{"0/0 +2 not evaluated", "NOT RUN: client runtime not available: the curl adapter needs curl",
		"compare checks 0/0 (2 not evaluated)", "2 not-run"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "2/2") && strings.Contains(stdout, "(compare)") && !strings.Contains(stdout, "0/0 +2") {
		t.Errorf("the compare row reads as passed:\n%s", stdout)
	}
	if !strings.Contains(stderr, "--allow-missing") {
		t.Errorf("stderr does not say how to accept the missing program:\n%s", stderr)
	}

	if code, stdout, stderr, _ := run("--allow-missing"); code != exitOK {
		t.Errorf("--allow-missing: exit %d; want 0 (the model runs pass)\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr, _ = run("--allow-missing", "--baseline", base, "--fail-missing")
	if code != exitCheckFailed || !strings.Contains(stderr, "2 runs of the baseline did not run (--fail-missing)") ||
		!strings.Contains(stdout, "MISSING   truth-curl / real-multi: in the baseline but not run here") {
		t.Errorf("--baseline --fail-missing: exit %d; want %d with both real runs missing\n%s\n%s", code, exitCheckFailed, stdout, stderr)
	}
}
