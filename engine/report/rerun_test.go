package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run rerun after a noisy attempt writes its request file again: refused without Rerun
// (two runs never share a file), replaced with it, and the earlier client log is gone.
func TestRerunReleasesTheRunsFiles(t *testing.T) {
	t.Parallel()
	w, err := Create(t.TempDir(), NewRunID(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first, err := w.Requests("s", "v")
	if err != nil {
		t.Fatal(err)
	}
	first.Write(&Request{Seq: 1})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := w.ClientLog("s", "v")
	if err != nil {
		t.Fatal(err)
	}
	log.Close()
	srvLogs, err := w.Subdir(ServerLogsPath("s", "v"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srvLogs, "access.log"), []byte("attempt 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Requests("s", "v"); err == nil {
		t.Fatal("a second request file for one run was accepted without Rerun")
	}
	if err := w.Rerun("s", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir, ClientLogPath("s", "v"))); !os.IsNotExist(err) {
		t.Errorf("the earlier attempt's client log is still there: %v", err)
	}
	if _, err := os.Stat(srvLogs); !os.IsNotExist(err) {
		t.Errorf("the earlier attempt's server logs are still there: %v", err)
	}
	second, err := w.Requests("s", "v")
	if err != nil {
		t.Fatalf("after Rerun: %v", err)
	}
	second.Write(&Request{Seq: 2})
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(w.Dir, RequestsPath("s", "v")))
	if want := `"seq":2,`; !contains(string(b), want) || contains(string(b), `"seq":1,`) {
		t.Errorf("request file %q: want only the final attempt's line", b)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
