//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// guardScript is run as: sh -c guardScript kalab-guard PROGRAM ARGS... with the watcher's
// pipe as descriptor 3. The watcher ignores the polite signals kalab sends the group, so
// that it lives until the pipe says kalab is gone or the group is killed; the program
// does not inherit descriptor 3.
const guardScript = `(trap '' TERM INT HUP; read -r _ <&3; kill -KILL 0) </dev/null >/dev/null 2>&1 &
exec "$@" 3<&-`

func guardPipe() (r, w *os.File, err error) { return os.Pipe() }

// wrap rewrites cmd to start through the guard, as the leader of a new group.
func wrap(cmd *exec.Cmd, r *os.File) {
	args := append([]string{"/bin/sh", "-c", guardScript, "kalab-guard", cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(cmd.SysProcAttr)
}

func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
