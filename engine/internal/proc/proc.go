// Package proc owns the programs kalab starts: each runs as the leader of a process group
// of its own, which kalab kills whenever the program's part of a run ends, including when
// kalab itself is killed with SIGKILL; and it names the process that holds a listening
// port, so that a real server's readiness can be checked to be the program kalab started.
//
// How a group is kept from outliving kalab (Unix): the program is started through a
// /bin/sh guard that forks one watcher and then execs the program, so the program is the
// group leader with its own pid, exit status and resource usage. The watcher blocks
// reading a pipe whose only write end kalab holds; when kalab closes it, or dies in any
// way (the kernel closes its descriptors), the read returns and the watcher kills the
// whole group (kill -KILL 0), escaped grandchildren included. On Linux the leader also
// gets a parent-death signal (SIGKILL); the kernel ties that signal to the thread that
// forked, so Start forks from a goroutine locked to its OS thread and keeps that thread
// alive until Release. On macOS and the BSDs there is no parent-death signal: the watcher
// alone covers kalab's death. A program's temporary directory is removed after kalab's
// death by a cleaner in a group of its own, once the watcher (the only holder of the
// cleaner's other pipe) has died of its own kill: a removal before the kill left files a
// program went on writing. On Windows there are no process groups: the program alone is
// killed when its run ends, and one killed with kalab's own process may outlive it.
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
)

// MaxExtraFiles is how many files of its own (cmd.ExtraFiles, descriptors 3 and up) a
// program started by Start may be given: the guard's shell names descriptors 0 to 9 only,
// and its own two pipes (the watcher's and the cleaner's) take two while it moves them into
// place.
const MaxExtraFiles = 5

// Group is a program started by kalab in a process group of its own.
type Group struct {
	cmd     *exec.Cmd
	guard   *os.File      // the watcher's pipe, write end: closing it kills the group
	cleaner *os.File      // the cleaner's release pipe, write end; nil without a temporary directory
	release chan struct{} // lets the forking thread go
	once    sync.Once
}

// Start starts cmd as the leader of a new process group under a guard (see the package
// doc). tmpDir, if not empty, is the program's temporary directory: when kalab dies before
// releasing the group, a cleaner outside the group removes it once the guard has killed
// the group, never before (otherwise it is the caller's to remove, after Release). cmd
// must not be started yet; its Path and Args are rewritten to go through the guard, and its
// SysProcAttr is replaced; its ExtraFiles (at most MaxExtraFiles) reach the program at
// descriptors 3, 4, ..., as exec places them; a context's Cancel (exec.CommandContext)
// kills the group instead of the leader alone. The caller still calls cmd.Wait, then
// Release.
func Start(cmd *exec.Cmd, tmpDir string) (*Group, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	if cmd.Process != nil {
		return nil, errors.New("proc: command already started")
	}
	if len(cmd.ExtraFiles) > MaxExtraFiles {
		return nil, fmt.Errorf("proc: %d extra files (at most %d)", len(cmd.ExtraFiles), MaxExtraFiles)
	}
	g := &Group{cmd: cmd, release: make(chan struct{})}
	r, w, err := guardPipe()
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	g.guard = w
	var aliveW *os.File
	if tmpDir != "" && r != nil {
		var aliveR *os.File
		if aliveR, aliveW, err = guardPipe(); err != nil {
			closeAll(r, w)
			return nil, fmt.Errorf("proc: %w", err)
		}
		// The cleaner starts before the program: started after it, a kalab killed in
		// between (a loaded machine once gave Chromium time to write its profile there)
		// left no one to remove the directory. Until the program starts, kalab's own copy
		// of the watcher's pipe keeps the cleaner waiting; kalab gone then, the cleaner
		// removes the directory, which nothing writes into yet.
		if g.cleaner, err = startCleaner(tmpDir, aliveR); err != nil {
			closeAll(r, w, aliveW)
			return nil, fmt.Errorf("proc: the cleaner of %s: %w", tmpDir, err)
		}
	}
	wrap(cmd, r, aliveW)
	if cmd.Cancel != nil {
		// Made with exec.CommandContext: the end of the context kills the whole group.
		cmd.Cancel = func() error { kill(cmd.Process); return nil }
	}
	err = g.start()
	closeAll(r, aliveW) // the child has its copies
	if err != nil {
		if g.cleaner != nil {
			_, _ = g.cleaner.WriteString("released\n") // the directory stays the caller's
		}
		closeAll(w, g.cleaner)
		return nil, err
	}
	return g, nil
}

// start starts the wrapped command from a goroutine locked to its OS thread: the
// parent-death signal follows the forking thread, not the process, so the thread is kept
// alive (locked, so the runtime neither reuses nor ends it) while the program may run.
func (g *Group) start() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := g.cmd.Start()
		errc <- err
		if err == nil {
			<-g.release
		}
		runtime.UnlockOSThread()
	}()
	return <-errc
}

// closeAll closes the files that are not nil.
func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// Pid is the leader's pid, which is also the group's id.
func (g *Group) Pid() int { return g.cmd.Process.Pid }

// Terminate asks the whole group to stop (SIGTERM where there are signals).
func (g *Group) Terminate() { terminate(g.cmd.Process) }

// Kill kills the whole group at once. It is safe to call at any time, repeatedly.
func (g *Group) Kill() { kill(g.cmd.Process) }

// Release kills what is left of the group, tells the cleaner that the temporary directory
// stays the caller's, and lets go of the guard; call it once the leader has been waited for
// (and on every other way out). Later calls do nothing.
func (g *Group) Release() {
	g.once.Do(func() {
		g.Kill()
		if g.cleaner != nil {
			_, _ = g.cleaner.WriteString("released\n")
		}
		closeAll(g.cleaner, g.guard)
		close(g.release)
	})
}
