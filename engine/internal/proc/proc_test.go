//go:build linux

package proc

import (
	"io"
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

// kalabDies closes kalab's ends of the group's pipes, as the kernel does when kalab dies.
func kalabDies(g *Group) {
	g.guard.Close()
	if g.cleaner != nil {
		g.cleaner.Close()
	}
}

// When kalab dies its end of the guard's pipe closes: the watcher kills the whole group,
// the program's children included, and the cleaner then removes the program's temporary
// directory.
func TestGuardKillsTheGroupWhenKalabGoes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "plan.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, cmd, child := startSleeper(t, tmp)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	kalabDies(g)
	eventually(t, "the program's child outlived kalab's end of the guard", func() bool { return !alive(child) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the program outlived kalab's end of the guard")
	}
	eventually(t, "the program's temporary directory is left", func() bool {
		_, err := os.Stat(tmp)
		return os.IsNotExist(err)
	})
}

// The temporary directory goes only once the group is dead: a program that writes into it
// without pause would otherwise put it back after its removal (a removal before the kill
// left Chromium's profile behind). Released normally, the directory stays the caller's.
func TestTempDirGoesAfterTheGroup(t *testing.T) {
	t.Parallel()
	tmp := filepath.Join(t.TempDir(), "tmp")
	writer := func() (*Group, chan struct{}) {
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", `i=0; while :; do i=$((i+1)); mkdir -p "$1/d" 2>/dev/null; : > "$1/d/f$i" 2>/dev/null; done`, "writer", tmp)
		g, err := Start(cmd, tmp)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		eventually(t, "the writer did not start", func() bool {
			entries, _ := os.ReadDir(filepath.Join(tmp, "d"))
			return len(entries) > 100
		})
		return g, done
	}
	g, done := writer()
	kalabDies(g)
	<-done
	g.Release()
	eventually(t, "the temporary directory is left after kalab's death", func() bool {
		_, err := os.Stat(tmp)
		return os.IsNotExist(err)
	})
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the temporary directory came back after its removal: %v", err)
	}

	g, done = writer()
	g.Kill()
	<-done
	g.Release()
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("Release removed the caller's temporary directory: %v", err)
	}
}

// The cleaner starts before the program, so a failed start must release it: the directory
// stays the caller's, as after Release, and no cleaner is left waiting.
func TestFailedStartLeavesTheTempDirToTheCaller(t *testing.T) {
	t.Parallel()
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "exit 0")
	cmd.Dir = filepath.Join(tmp, "no-such-dir") // the fork's chdir fails: Start returns an error
	if _, err := Start(cmd, tmp); err == nil {
		t.Fatal("Start in a missing directory succeeded")
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("a failed start removed the caller's temporary directory: %v", err)
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

// A program's own files reach it at descriptors 3 and 4, as exec places them, with the
// guard's pipe gone from its descriptors; and the watcher holds none of them, so the
// program's output pipe ends when the program does, while the group is not yet released.
func TestExtraFilesKeepTheirDescriptors(t *testing.T) {
	t.Parallel()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd := exec.Command("sh", "-c", `read -r line <&3; echo "got $line" >&4; [ -e /dev/fd/5 ] && echo "5 open" >&4; exit 0`)
	cmd.ExtraFiles = []*os.File{inR, outW}
	g, err := Start(cmd, "")
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	go func() { _ = cmd.Wait() }()
	if _, err := inW.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(outR); got <- string(b) }()
	select {
	case s := <-got:
		if s != "got hello\n" {
			t.Errorf("the program wrote %q, want %q", s, "got hello\n")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the program's output pipe outlived it: the watcher holds a copy")
	}
	many := exec.Command("true")
	many.ExtraFiles = make([]*os.File, MaxExtraFiles+1)
	if g, err := Start(many, ""); err == nil {
		g.Release()
		t.Errorf("Start took %d extra files, more than the guard's shell can place", len(many.ExtraFiles))
	}
}
