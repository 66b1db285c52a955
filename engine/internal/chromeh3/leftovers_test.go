//go:build linux

package chromeh3

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// entries lists what dir holds.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// shortTemp is an empty directory for TMPDIR with a short path: Chromium puts a Unix socket
// a few levels below TMPDIR, and t.TempDir's long names pass the socket path's 107 bytes.
func shortTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "kh3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A Chromium run leaves nothing in TMPDIR: its profile and its own org.chromium.Chromium.*
// directories live in one directory of kalab's, removed once the browser's group is dead.
func TestRunLeavesNothingInTMPDIR(t *testing.T) {
	bin := chromium(t)
	s := startH3(t, 30*time.Second)
	tmp := shortTemp(t)
	t.Setenv("TMPDIR", tmp)
	if _, err := Run(context.Background(), bin, Options{Origin: "https://" + s.Addr, CertSPKI: s.SPKI, Steps: []Step{{Path: "/a"}}}); err != nil {
		t.Fatal(err)
	}
	if left := entries(t, tmp); len(left) > 0 {
		t.Fatalf("Run left %v in TMPDIR", left)
	}
}

// TestHelperRunUntilKilled is the kalab process of TestSIGKILLLeavesNothingInTMPDIR: it
// drives Chromium through a long pause until it is killed.
func TestHelperRunUntilKilled(t *testing.T) {
	if os.Getenv("KALAB_CHROMEH3_HELPER") != "1" {
		t.Skip("the helper process of TestSIGKILLLeavesNothingInTMPDIR")
	}
	s := startH3(t, 30*time.Second)
	_, err := Run(context.Background(), os.Getenv("KALAB_CHROMEH3_BIN"), Options{Origin: "https://" + s.Addr, CertSPKI: s.SPKI,
		Steps: []Step{{Path: "/a"}, {Pause: time.Hour, Path: "/b"}}})
	t.Fatalf("Run returned before it was killed: %v", err)
}

// kalab killed with SIGKILL while Chromium runs: the guard kills Chromium's group and only
// then is its directory removed (a removal before the kill left the profile behind, as
// Chromium went on writing into it), with Chromium's TMPDIR inside it.
func TestSIGKILLLeavesNothingInTMPDIR(t *testing.T) {
	bin := chromium(t)
	for i := range 3 {
		tmp := shortTemp(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRunUntilKilled$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KALAB_CHROMEH3_HELPER=1", "KALAB_CHROMEH3_BIN="+bin, "TMPDIR="+tmp)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Chromium is up and writing its profile once TMPDIR holds some dozen files.
		started := false
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !started; time.Sleep(50 * time.Millisecond) {
			n := 0
			_ = filepath.WalkDir(tmp, func(string, os.DirEntry, error) error { n++; return nil })
			started = n > 24
		}
		if !started {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("kill %d: Chromium did not start within a minute", i)
		}
		time.Sleep(time.Duration(i) * 300 * time.Millisecond) // a different moment of its life each time
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		var left []string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if left = entries(t, tmp); len(left) == 0 {
				break
			}
		}
		if len(left) > 0 {
			t.Fatalf("kill %d: %s left in TMPDIR 15 s after the SIGKILL", i, strings.Join(left, ", "))
		}
		// And it stays empty: nothing of the group writes after the removal.
		time.Sleep(500 * time.Millisecond)
		if left = entries(t, tmp); len(left) > 0 {
			t.Fatalf("kill %d: %s came back in TMPDIR after its removal", i, strings.Join(left, ", "))
		}
	}
}

// Under a TMPDIR long enough that Chromium's singleton socket would not fit in a Unix
// socket's path, kalab makes Chromium's directory under /tmp instead: Chromium runs, and
// neither directory keeps anything (it died with "Socket path too long" before).
func TestRunUnderALongTMPDIR(t *testing.T) {
	bin := chromium(t)
	s := startH3(t, 30*time.Second)
	long := filepath.Join(shortTemp(t), strings.Repeat("d", 60))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	if tempBase(long) != "/tmp" || tempBase("/tmp") != "/tmp" {
		t.Fatalf("tempBase(%d characters) = %s", len(long), tempBase(long))
	}
	if _, err := Run(context.Background(), bin, Options{Origin: "https://" + s.Addr, CertSPKI: s.SPKI, Steps: []Step{{Path: "/a"}}}); err != nil {
		t.Fatal(err)
	}
	if left := entries(t, long); len(left) > 0 {
		t.Fatalf("Run left %v in TMPDIR", left)
	}
}
