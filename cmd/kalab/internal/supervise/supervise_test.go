//go:build unix

package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain plays the child: Run starts this test binary as `BINARY run MODE`.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "run" {
		switch os.Args[2] {
		case "ok":
			fmt.Fprintln(os.Stderr, "a line of the run's own")
			os.Exit(0)
		case "failed":
			os.Exit(1)
		case "panic":
			fmt.Fprintln(os.Stderr, "before the crash")
			done := make(chan struct{})
			go func() { panic("boom") }()
			<-done
		case "sigkill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		os.Exit(99)
	}
	os.Exit(m.Run())
}

// run supervises one child of the given mode and returns its code and what it printed.
func run(t *testing.T, mode string) (int, string) {
	t.Helper()
	errf, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	t.Setenv("TMPDIR", t.TempDir())
	code, ok := Run([]string{mode}, t.TempDir(), errf)
	if !ok {
		t.Fatal("no child started")
	}
	b, err := os.ReadFile(errf.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

func TestChildOutcomes(t *testing.T) {
	for _, c := range []struct {
		mode   string
		code   int
		stderr []string
		not    []string
	}{
		{"ok", exitOK, []string{"a line of the run's own\n"}, []string{"crashed"}},
		{"failed", 1, nil, []string{"crashed"}},
		// A panic: exit 3, the first line named, the report kept in a file, not on stderr.
		{"panic", exitEngine, []string{"before the crash\n", "kalab run: crashed: panic: boom", "the full crash report ("}, []string{"goroutine "}},
		{"sigkill", exitEngine, []string{"kalab run: crashed: killed by SIGKILL"}, nil},
	} {
		t.Run(c.mode, func(t *testing.T) {
			code, stderr := run(t, c.mode)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			for _, s := range c.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for _, s := range c.not {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr has %q:\n%s", s, stderr)
				}
			}
		})
	}
}

func TestCopyUntilCrash(t *testing.T) {
	var out, dump strings.Builder
	first, lines := copyUntilCrash(strings.NewReader("ok 1\npanic: x\n\ngoroutine 1 [running]:\nmain.main()\n"), &out, &dump)
	if out.String() != "ok 1\n" || first != "panic: x" || lines != 4 || !strings.HasPrefix(dump.String(), "panic: x\n") {
		t.Fatalf("out %q, first %q, %d lines, dump %q", out.String(), first, lines, dump.String())
	}
}
