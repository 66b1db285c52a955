//go:build linux

package proc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	st, err := Stat(pid)
	return err == nil && st.State != 'Z'
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// startSleeper starts sh with a sleep 3600 child under the guard and returns the group and
// the child's pid.
func startSleeper(t *testing.T, tmp string) (*Group, *exec.Cmd, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", "sleep 3600 & echo $! > "+pidFile+"; wait")
	g, err := Start(cmd, tmp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Release)
	var pid int
	eventually(t, "the child did not start", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	if st, _ := Stat(pid); st.Pgid != g.Pid() {
		t.Fatalf("the child is in group %d, not the program's %d", st.Pgid, g.Pid())
	}
	return g, cmd, pid
}

// When kalab dies its end of the guard's pipe closes: the watcher removes the program's
// temporary directory and kills the whole group, the program's children included.
func TestGuardKillsTheGroupWhenKalabGoes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "plan.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, cmd, child := startSleeper(t, tmp)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	g.guard.Close() // what the kernel does to kalab's descriptors when it dies
	eventually(t, "the program's child outlived kalab's end of the guard", func() bool { return !alive(child) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the program outlived kalab's end of the guard")
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the program's temporary directory is left: %v", err)
	}
}

// Release kills what is left of the group; the program is its leader, with its own exit
// status (not the guard shell's).
func TestReleaseKillsTheGroup(t *testing.T) {
	t.Parallel()
	g, cmd, child := startSleeper(t, "")
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	g.Kill()
	var err error
	select {
	case err = <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the program outlived Kill")
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Errorf("the leader ended with %v, want killed by SIGKILL", err)
	}
	g.Release()
	eventually(t, "the program's child outlived Release", func() bool { return !alive(child) })
}

// CheckOwner accepts a socket held by the group and names any other holder.
func TestCheckOwner(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	self := os.Getpid()
	st, _ := Stat(self)
	if err := CheckOwner(port, st.Pgid); err != nil {
		t.Errorf("own socket refused: %v", err)
	}
	err = CheckOwner(port, st.Pgid+1_000_000)
	want := "port " + strconv.Itoa(port) + " on 127.0.0.1 is held by pid " + strconv.Itoa(self) + " ("
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("foreign holder: got %v, want it to say %q", err, want)
	}
}
