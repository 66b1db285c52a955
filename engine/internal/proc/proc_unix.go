//go:build unix

package proc

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// guardScript is run as: sh -c guardScript kalab-guard DIR PWDKEEP PROGRAM ARGS... with the
// watcher's pipe as descriptor 3. The watcher ignores the polite signals kalab sends the
// group, so that it lives until the pipe says kalab is gone (then it removes DIR, the
// program's temporary files, if not empty, and kills the group, itself included) or the
// group is killed by kalab, which then removes DIR itself. The program does not inherit
// descriptor 3. The shell exports PWD of its own accord; unless the program's environment
// had it (PWDKEEP is "keep"), it is unset so the program gets exactly the environment kalab
// built for it (engine/internal/childenv).
const guardScript = `d=$1; [ "$2" = keep ] || unset PWD; shift 2
(trap '' TERM INT HUP; read -r _ <&3; [ -n "$d" ] && rm -rf -- "$d"; kill -KILL 0) </dev/null >/dev/null 2>&1 &
exec "$@" 3<&-`

func guardPipe() (r, w *os.File, err error) { return os.Pipe() }

// wrap rewrites cmd to start through the guard, as the leader of a new group.
func wrap(cmd *exec.Cmd, r *os.File, tmpDir string) {
	keep := "drop"
	if hasPWD(cmd.Env) {
		keep = "keep"
	}
	args := append([]string{"/bin/sh", "-c", guardScript, "kalab-guard", tmpDir, keep, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	cmd.ExtraFiles = []*os.File{r}
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
