//go:build unix

// Package supervise runs kalab run in a child process and turns a crash of the child into
// exit 3, with the Go crash report kept beside the results and the results closed.
package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report"
	"golang.org/x/term"
)

// Crash handling. A Go program that panics in any goroutine or hits a fatal runtime error
// (out of memory, concurrent map writes) prints every goroutine's stack and exits with
// status 2, which is kalab's "invalid input, nothing ran". No code in the crashing process
// can change that status or the dump, so `kalab run` runs the plan in a child process (the
// same binary, re-executed) and watches it:
//
//   - the child's stderr passes through line by line until a line opens a Go crash report
//     (panic:, fatal error:, runtime:, SIGSEGV: ...); from there the dump goes to a file,
//     <out>/<run-id>/crash.txt, and stderr gets a short message naming it;
//   - a child that crashed, or died of a signal kalab does not handle (SIGKILL from the
//     out-of-memory killer), makes the parent exit 3 after it closes results.jsonl with an
//     invocation record of state crashed (report.Seal), and points latest at it;
//   - if the parent dies too (kill -9 of both), the child is killed with it (Pdeathsig) and
//     results.jsonl still ends in the opening invocation record, which readers take as
//     "did not complete".
//
// Ctrl-C and SIGTERM are forwarded to the child, which handles them as before (exit 130).
// KALAB_NO_SUPERVISOR=1 runs the plan in the first process (for a debugger); then a crash
// is Go's exit 2 again.
const (
	envRunID      = "KALAB_SUPERVISED_RUN_ID" // set in the child: the run id the parent chose
	envStderrTTY  = "KALAB_STDERR_TTY"        // set in the child when the parent's stderr is a terminal
	envNoSuper    = "KALAB_NO_SUPERVISOR"
	envTestFault  = "KALAB_TEST_FAULT" // tests only: panic, sigkill or oom while the second run ends
	crashFileName = "crash.txt"
)

// kalab's exit codes that a supervised run ends with (docs/running.md, "Exit codes").
const (
	exitOK          = 0
	exitEngine      = 3
	exitInterrupted = 130
)

// crashStart matches the first line of the Go runtime's crash report.
var crashStart = regexp.MustCompile(`^(panic: |fatal error: |runtime: |SIG[A-Z]+: |unexpected fault address |goroutine \d+ \[)`)

// Run runs `kalab run args` in a child process and maps a crash to exit 3; ok is false
// when no child could be started (the caller then runs the command itself). out is the
// results directory the child writes under (--out), where a crashed child's results are
// closed.
func Run(args []string, out string, stderr *os.File) (code int, ok bool) {
	// The child's parent-death signal follows the thread that forks it: keep this
	// goroutine on one thread, which then lives until the child has been waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	runID := report.NewRunID(time.Now())
	dump, err := os.CreateTemp("", "kalab-crash-*.txt")
	if err != nil {
		return 0, false
	}
	// Unlinked at once, so that nothing is left behind if kalab is killed (kill -9); a
	// crash's dump is copied out of the open file.
	_ = os.Remove(dump.Name())
	defer func() { _ = dump.Close() }() // unlinked above: closing it frees the space, and a failure to leaves nothing behind

	cmd := &exec.Cmd{Path: exe, Args: append([]string{os.Args[0], "run"}, args...),
		Stdin: os.Stdin, Stdout: os.Stdout, Env: append(os.Environ(), envRunID+"="+runID)}
	if term.IsTerminal(int(stderr.Fd())) {
		cmd.Env = append(cmd.Env, envStderrTTY+"=1")
	}
	setPdeathsig(cmd)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return 0, false
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, false
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s) // a child that has exited has nothing to forward the signal to
		}
	}()
	first, lines := copyUntilCrash(pipe, stderr, dump)
	code, reason := childOutcome(cmd.Wait(), first, stderr)
	if reason == "" {
		return code, true
	}
	fmt.Fprintf(stderr, "kalab run: crashed: %s\n", reason)
	dir := filepath.Join(out, runID)
	if lines > 0 {
		fmt.Fprintf(stderr, "kalab run: the full crash report (%d lines) is in %s\n", lines, keepCrashDump(dump, dir))
	}
	if wrote, err := report.Seal(out, runID, "crashed: "+reason, time.Now().UTC()); err == nil && wrote {
		fmt.Fprintf(stderr, "kalab run: the runs that ended are in %s; it is marked incomplete\n", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "kalab run: closing %s: %v\n", dir, err)
	}
	return exitEngine, true
}

// childOutcome maps how the child ended to kalab's exit code; reason is set (and code is
// then exitEngine) when the child crashed: a fatal signal other than an interrupt, or exit 2
// after a line that opens a Go crash report (first).
func childOutcome(werr error, first string, stderr io.Writer) (code int, reason string) {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return exitOK, ""
	case !errors.As(werr, &ee):
		fmt.Fprintf(stderr, "kalab run: %v\n", werr)
		return exitEngine, ""
	}
	st, _ := ee.Sys().(syscall.WaitStatus)
	switch {
	case st.Signaled() && (st.Signal() == syscall.SIGINT || st.Signal() == syscall.SIGTERM):
		return exitInterrupted, ""
	case st.Signaled() && st.Signal() == syscall.SIGKILL:
		return exitEngine, "killed by SIGKILL (the out-of-memory killer, or kill -9)"
	case st.Signaled():
		return exitEngine, fmt.Sprintf("killed by signal %d (%v)", int(st.Signal()), st.Signal())
	case first != "" && ee.ExitCode() == 2:
		return exitEngine, first
	}
	return ee.ExitCode(), ""
}

// keepCrashDump copies the crash report out of the unlinked dump: into the run's directory
// when there is one, else into a temporary file, the only copy. It returns where it went
// (empty if nowhere).
func keepCrashDump(dump *os.File, dir string) string {
	if _, err := os.Stat(dir); err == nil {
		if err := copyFile(dump, filepath.Join(dir, crashFileName)); err == nil {
			return filepath.Join(dir, crashFileName)
		}
	}
	kept, err := os.CreateTemp("", "kalab-crash-*.txt")
	if err != nil {
		return ""
	}
	// Only its name was wanted: the copy is made under it below.
	_ = kept.Close()
	_ = os.Remove(kept.Name())
	if copyFile(dump, kept.Name()) != nil {
		return ""
	}
	return kept.Name()
}

// copyUntilCrash copies r to w line by line until a line opens a Go crash report; that line
// and the rest go to dump. It returns the crash's first line (empty if none) and how many
// lines went to dump.
func copyUntilCrash(r io.Reader, w, dump io.Writer) (first string, lines int) {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(dump)
	// The dump is best effort: the crash's first line is returned whether or not it was kept.
	defer func() { _ = bw.Flush() }()
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if first == "" && crashStart.MatchString(line) {
				first = trimNL(line)
			}
			if first != "" {
				_, _ = bw.WriteString(line) // best effort, as the flush above
				lines++
			} else {
				_, _ = io.WriteString(w, line) // the child's output for a terminal, as an Fprint
			}
		}
		if err != nil {
			return first, lines
		}
	}
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// copyFile copies the whole of src (from its start) into a new file.
func copyFile(src *os.File, to string) error {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, atomicfile.Mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(to) // the error returned says what failed
	}
	return err
}

// RunID is the run id the supervising parent chose, or "" when not supervised.
func RunID() string { return os.Getenv(envRunID) }

// oomSink holds the "oom" fault's allocations, reachable so that none is freed.
var oomSink [][]byte

// injectFault makes the child fail as the fault tests ask: a panic in another goroutine, a
// SIGKILL as the out-of-memory killer sends, or memory allocated until the runtime dies.
func injectFault(kind string) {
	switch kind {
	case "panic":
		done := make(chan struct{})
		go func() { panic("forced by " + envTestFault + "=panic") }()
		<-done
	case "sigkill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // the process ends here; select waits for the signal
		select {}
	case "oom":
		debug.SetGCPercent(-1)
		for {
			b := make([]byte, 64<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			oomSink = append(oomSink, b)
		}
	}
}
