//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// guardScript is run as: sh -c SCRIPT kalab-guard DIR PWDKEEP PROGRAM ARGS... with the
// watcher's pipe as descriptor 3 and the caller's ExtraFiles, if any, after it (4, 5, ...);
// SCRIPT is guardScript(n) for n such files. The watcher ignores the polite signals kalab
// sends the group, so that it lives until the pipe says kalab is gone (then it removes DIR,
// the program's temporary files, if not empty, and kills the group, itself included) or the
// group is killed by kalab, which then removes DIR itself. The watcher holds none of the
// caller's files (a program's pipe must see its end when the program goes), and the program
// does not inherit descriptor 3: its own files move down to 3, 4, ..., where the caller put
// them. The shell exports PWD of its own accord; unless the program's environment had it
// (PWDKEEP is "keep"), it is unset so the program gets exactly the environment kalab built
// for it (engine/internal/childenv).
func guardScript(n int) string {
	var closeExtra, shift strings.Builder
	for i := range n {
		fmt.Fprintf(&closeExtra, " %d<&-", 4+i)
		fmt.Fprintf(&shift, " %d<&%d", 3+i, 4+i)
	}
	shift.WriteString(fmt.Sprintf(" %d<&-", 3+n))
	return `d=$1; [ "$2" = keep ] || unset PWD; shift 2
(trap '' TERM INT HUP; read -r _ <&3; [ -n "$d" ] && rm -rf -- "$d"; kill -KILL 0) </dev/null >/dev/null 2>&1` + closeExtra.String() + ` &
exec "$@"` + shift.String()
}

func guardPipe() (r, w *os.File, err error) { return os.Pipe() }

// wrap rewrites cmd to start through the guard, as the leader of a new group. The
// caller's ExtraFiles follow the guard's pipe; the guard moves them back to 3, 4, ....
func wrap(cmd *exec.Cmd, r *os.File, tmpDir string) {
	keep := "drop"
	if hasPWD(cmd.Env) {
		keep = "keep"
	}
	args := append([]string{"/bin/sh", "-c", guardScript(len(cmd.ExtraFiles)), "kalab-guard", tmpDir, keep, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	cmd.ExtraFiles = append([]*os.File{r}, cmd.ExtraFiles...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(cmd.SysProcAttr)
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
