package kalabtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stop ends a recorded test's function, as FailNow and SkipNow end a real one.
type stop struct{}

// recordingTB is a testing.TB that records what Run reports, so a test can check that Run
// fails (or skips) without failing itself.
type recordingTB struct {
	testing.TB
	dir             string
	failed, skipped []string
}

func (r *recordingTB) Helper()         {}
func (r *recordingTB) TempDir() string { return r.dir }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(stop{})
}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = append(r.skipped, fmt.Sprintf(format, args...))
	panic(stop{})
}

// run calls Run with a recording TB and returns what it reported.
func run(t *testing.T, src Source, opts ...Option) *recordingTB {
	r := &recordingTB{TB: t, dir: t.TempDir()}
	func() {
		defer func() {
			if p := recover(); p != nil && p != (stop{}) {
				panic(p)
			}
		}()
		Run(r, src, opts...)
	}()
	return r
}

// TestNotRunFails: a file with no check whose run cannot run here (nginx is not on PATH)
// fails, as kalab run exits 3 on it; SkipNoVerdict skips it instead.
func TestNotRunFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no program to find
	file := filepath.Join(t.TempDir(), "s.yaml")
	src := "name: s\nserver: {exec: nginx}\nload: {requests: 1}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, File(file))
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "no verdict: not run:") {
		t.Errorf("a run not run: failed %q, skipped %q; want one failure saying it did not run", r.failed, r.skipped)
	}
	r = run(t, File(file), SkipNoVerdict())
	if len(r.failed) != 0 || len(r.skipped) != 1 || !strings.Contains(r.skipped[0], "not run:") {
		t.Errorf("with SkipNoVerdict: failed %q, skipped %q; want one skip", r.failed, r.skipped)
	}
}

// TestFakeTBFailedCheck: a testing.TB that is not a *testing.T (no bubble can be opened
// from it) runs on the real clock and still hears of a check that did not hold.
func TestFakeTBFailedCheck(t *testing.T) {
	sc := Scenario{Name: "fake", Load: Load{Requests: 2}, Expect: []string{"errors == 1"}}
	r := run(t, sc)
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "kalabtest.Scenario(fake): fake/default: errors == 1 (errors=0)") {
		t.Errorf("failed %q, skipped %q; want the check that did not hold", r.failed, r.skipped)
	}
}

// TestLoadMessages: a source that does not load fails t at once, with file:line:col for
// YAML bytes and the field path for a scenario built in Go; nothing runs.
func TestLoadMessages(t *testing.T) {
	r := run(t, YAML("bad.yaml", []byte("name: b\nserver: {idle_timout: 1s}\n")))
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "bad.yaml:2:10: server.idle_timout: unknown field") {
		t.Errorf("YAML: failed %q", r.failed)
	}
	r = run(t, Scenario{Name: "b", Load: Load{Requests: 1}, Set: map[string]any{"load.burst": -1}})
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "kalabtest.Scenario(b): load.burst: ") {
		t.Errorf("Scenario: failed %q", r.failed)
	}
	r = run(t, Scenario{Name: "b", Set: map[string]any{"load": 1, "load.burst": 2}})
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "load.burst: load is set to a value, not a section") {
		t.Errorf("Scenario with a path through a value: failed %q", r.failed)
	}
}
