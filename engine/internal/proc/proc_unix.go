//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// guardScript is run as: sh -c SCRIPT kalab-guard PWDKEEP PROGRAM ARGS... with the
// watcher's pipe as descriptor 3, the caller's ExtraFiles, if any, after it (4, 5, ...;
// SCRIPT is guardScript(n) for n such files), and then, when the program has a temporary
// directory, the write end of the cleaner's pipe (4+n). The watcher ignores the polite
// signals kalab sends the group, so that it lives until the pipe says kalab is gone (then
// it kills the group, itself included: the cleaner, outside the group, sees its pipe close
// and only then removes the directory) or the group is killed by kalab. The watcher holds
// none of the caller's files (a program's pipe must see its end when the program goes), and
// the program inherits neither descriptor 3 nor the cleaner's pipe: its own files move down
// to 3, 4, ..., where the caller put them. The shell exports PWD of its own accord; unless
// the program's environment had it (PWDKEEP is "keep"), it is unset so the program gets
// exactly the environment kalab built for it (engine/internal/childenv).
func guardScript(n int) string {
	var closeExtra, shift strings.Builder
	for i := range n {
		fmt.Fprintf(&closeExtra, " %d<&-", 4+i)
		fmt.Fprintf(&shift, " %d<&%d", 3+i, 4+i)
	}
	shift.WriteString(fmt.Sprintf(" %d<&- %d<&-", 3+n, 4+n))
	return `[ "$1" = keep ] || unset PWD; shift 1
(trap '' TERM INT HUP; read -r _ <&3; kill -KILL 0) </dev/null >/dev/null 2>&1` + closeExtra.String() + ` &
exec "$@"` + shift.String()
}

// cleanerScript is run as: sh -c SCRIPT kalab-cleaner DIR, in a process group of its own
// (kalab's death or the group's kill must not take it along), with kalab's release pipe at
// descriptor 3 and the watcher's pipe at 4. A line on 3 is kalab releasing the group: DIR
// is then the caller's, and the cleaner leaves. The end of 3 without a line is kalab gone;
// the cleaner then waits for the end of 4, which comes when the watcher has killed the
// group (the watcher is the only holder of its write end, and dies by its own kill), and
// only then removes DIR: a program still running would write into a directory removed
// under it (Chromium's profile came back that way).
const cleanerScript = `if IFS= read -r _ <&3; then exit 0; fi
read -r _ <&4
rm -rf -- "$1"`

func guardPipe() (r, w *os.File, err error) { return os.Pipe() }

// wrap rewrites cmd to start through the guard, as the leader of a new group. The
// caller's ExtraFiles follow the guard's pipe; the guard moves them back to 3, 4, ....
// alive, when not nil, is the cleaner's pipe: the watcher alone keeps it.
func wrap(cmd *exec.Cmd, r, alive *os.File) {
	keep := "drop"
	if hasPWD(cmd.Env) {
		keep = "keep"
	}
	args := append([]string{"/bin/sh", "-c", guardScript(len(cmd.ExtraFiles)), "kalab-guard", keep, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	cmd.ExtraFiles = append([]*os.File{r}, cmd.ExtraFiles...)
	if alive != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, alive)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(cmd.SysProcAttr)
}

// startCleaner starts the cleaner of tmpDir (cleanerScript) and returns kalab's end of its
// release pipe; alive is the read end of the watcher's pipe, closed here.
func startCleaner(tmpDir string, alive *os.File) (*os.File, error) {
	defer func() { _ = alive.Close() }() // kalab's copy: the cleaner holds its own
	relR, relW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer func() { _ = relR.Close() }() // kalab's copy: the cleaner holds its own
	c := exec.Command("/bin/sh", "-c", cleanerScript, "kalab-cleaner", tmpDir)
	c.ExtraFiles = []*os.File{relR, alive}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		_ = relW.Close() // the error returned says what failed
		return nil, err
	}
	go func() { _ = c.Wait() }()
	return relW, nil
}

func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// hasPWD reports whether env (nil: kalab's own) sets PWD.
func hasPWD(env []string) bool {
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "PWD=") {
			return true
		}
	}
	return false
}
