package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoOrphans starts the built kalab binary on a small scenario for each real client
// adapter and real server it can start, interrupts it with SIGINT, SIGTERM or SIGKILL once
// the program runs, and counts what is left of the run: processes of its session, the
// listening ports they held, and files in its TMPDIR. Every count must be zero.
func TestNoOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kalab and real programs 24 times")
	}
	bin := filepath.Join(t.TempDir(), "kalab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const load = "network: {rtt: 10ms}\nload: {requests: 200, burst: 1, pause: 300ms}\n"
	cases := []struct {
		name, need, comm, body string
	}{
		{"node-agent", "node", "node", "client: {exec: node-agent}\n"},
		{"python-requests", "python3", "python3", "client: {exec: python-requests}\n"},
		{"curl-loop", "curl", "bash", "client: {exec: curl-loop}\n"},
		// The program's own child: only the group's death takes it.
		{"sleep-3600", "sh", "sleep", "client: {exec: {command: [sh, ./client.sh]}}\n"},
		{"nginx", "nginx", "nginx", "server: {exec: nginx, idle_timeout: 5s}\n"},
		{"node-server", "node", "node", "server: {exec: node, idle_timeout: 5s}\n"},
		{"haproxy", "haproxy", "haproxy", "server: {exec: haproxy, idle_timeout: 5s}\n"},
		// Chromium: the browser, its zygotes and renderers all go with its group.
		{"chromium", "chromium", "chromium", "server: {http: \"3\", idle_timeout: 30s}\nclient: {exec: {adapter: chromium}, idle_timeout: 30s}\n"},
	}
	for _, c := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(c.name+"/"+sig.String(), func(t *testing.T) {
				need(t, c.need)
				t.Parallel()
				dir := t.TempDir()
				file := filepath.Join(dir, "orphans.yaml")
				src := "name: orphans-" + c.name + "\n" + load + c.body
				write(t, file, src)
				write(t, filepath.Join(dir, "client.sh"), "sleep 3600\n")
				tmp := filepath.Join(dir, "tmp")
				if err := os.Mkdir(tmp, 0o755); err != nil {
					t.Fatal(err)
				}
				orphanRun(t, bin, dir, file, tmp, c.comm, sig)
			})
		}
	}
}

// need skips a case whose program is missing, except in CI, which installs them.
func need(t *testing.T, prog string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI installs it in .ci/preamble)", prog)
		}
		t.Skipf("%s is not installed", prog)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// orphanRun runs kalab in a session of its own, waits for a process named comm in a group
// kalab made, sends sig to kalab and checks that nothing of the run is left.
func orphanRun(t *testing.T, bin, dir, file, tmp, comm string, sig syscall.Signal) {
	cmd := exec.Command(bin, "run", "--allow-exec", file, "--out", filepath.Join(dir, "results"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "KALAB_LAG_TOLERANCE=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = syscall.Kill(-sid, syscall.SIGKILL) }() // whatever a failure left
	if !waitFor(60*time.Second, func() bool { return started(sid, comm) >= atLeast(comm) }) {
		t.Fatalf("no %s started by kalab within 60 s; kalab's stderr: %s", comm, stderr.String())
	}
	ports := listening(sid)
	if err := syscall.Kill(sid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("kalab still runs 30 s after %v", sig)
	}
	if !waitFor(10*time.Second, func() bool { return len(members(sid)) == 0 }) {
		t.Errorf("after %v, processes of the run are left: %s", sig, strings.Join(members(sid), "; "))
	}
	if left := stillListening(ports); len(left) > 0 {
		t.Errorf("after %v, ports are still listening: %v", sig, left)
	}
	if !waitFor(5*time.Second, func() bool { return len(entries(tmp)) == 0 }) {
		t.Errorf("after %v, temporary files are left in TMPDIR: %v", sig, entries(tmp))
	}
}

func waitFor(d time.Duration, ok func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(25 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// proc is one line of ps: a process, its session and group, its state and its name.
type proc struct {
	pid, sid, pgid int
	state, comm    string
}

// session lists the live (not zombie) processes of session sid, as ps sees them.
func session(sid int) []proc {
	out, err := exec.Command("ps", "-e", "-o", "pid=,sid=,pgid=,stat=,comm=").Output()
	if err != nil {
		panic(fmt.Sprintf("ps: %v", err))
	}
	var ps []proc
	for _, l := range strings.Split(string(out), "\n") {
		var p proc
		if n, _ := fmt.Sscan(l, &p.pid, &p.sid, &p.pgid, &p.state, &p.comm); n == 5 && p.sid == sid && !strings.HasPrefix(p.state, "Z") {
			ps = append(ps, p)
		}
	}
	return ps
}

// pids lists the live processes of session sid.
func pids(sid int) []int {
	var out []int
	for _, p := range session(sid) {
		out = append(out, p.pid)
	}
	return out
}

// started reports whether a process named comm runs in session sid in a group of its own
// (one kalab made for a program, not kalab's own: a version probe does not count).
func started(sid int, comm string) int {
	n := 0
	for _, p := range session(sid) {
		if p.comm == comm && p.pgid != sid {
			n++
		}
	}
	return n
}

// atLeast is how many processes named comm show that the program itself runs: one, but
// for Chromium, whose version check is a process of that name too (a short one, after
// which kalab may already be gone on a busy machine) while the browser runs as several
// (the browser, its zygotes and its helpers).
func atLeast(comm string) int {
	if comm == "chromium" {
		return 3
	}
	return 1
}

// members describes the processes left in session sid.
func members(sid int) []string {
	var out []string
	for _, pid := range pids(sid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
	}
	return out
}

// listening returns the inodes (with their ports) of the listening TCP sockets that
// processes of session sid hold.
func listening(sid int) map[string]string {
	held := map[string]bool{}
	for _, pid := range pids(sid) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				held[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	out := map[string]string{}
	for ino, port := range listenTable() {
		if held[ino] {
			out[ino] = port
		}
	}
	return out
}

// stillListening returns the ports of ports whose sockets still listen.
func stillListening(ports map[string]string) []string {
	var out []string
	now := listenTable()
	for ino, port := range ports {
		if now[ino] != "" {
			out = append(out, port)
		}
	}
	return out
}

// listenTable maps the inode of every listening TCP socket to its local address.
func listenTable() map[string]string {
	out := map[string]string{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) >= 10 && fl[3] == "0A" {
				out[fl[9]] = fl[1]
			}
		}
		f.Close()
	}
	return out
}

func entries(dir string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestPortHeldByAnotherProcess: when the process answering on the server's port is not the
// one kalab started (here the command hands the port to a python3 http.server in a session
// of its own, as a process that took the port first would hold it), the run is an engine
// error: kalab exits 3 and names the port and the holder's pid and name.
func TestPortHeldByAnotherProcess(t *testing.T) {
	need(t, "python3")
	need(t, "setsid")
	dir := t.TempDir()
	bin := filepath.Join(dir, "kalab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pidFile := filepath.Join(dir, "holder.pid")
	file := filepath.Join(dir, "held.yaml")
	write(t, file, `name: held
load: {requests: 2}
server: {command: "setsid python3 -m http.server {port} --bind 127.0.0.1 </dev/null >/dev/null 2>&1 & echo $! > `+pidFile+`; exec sleep 3600"}
`)
	defer func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
	cmd := exec.Command(bin, "run", "--allow-exec", file, "--out", filepath.Join(dir, "results"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KALAB_LAG_TOLERANCE=0")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("kalab still runs after 60 s: %s", out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitEngine {
		t.Fatalf("kalab exited %d (%v), want %d; output:\n%s", code, err, exitEngine, out.String())
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	want := "is held by pid " + strings.TrimSpace(string(b)) + " (python3)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("kalab's output does not say the port %s:\n%s", want, out.String())
	}
}
