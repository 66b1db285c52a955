package scenarios

import (
	"errors"
	"fmt"
	"syscall"
)

// ResolveArgs maps a command's file and directory arguments through Resolve, scenarios/ when
// there are none. An argument that cannot be resolved is kept as given (it fails to load with
// its name); err is set only when the system kept the bundled scenarios from being written
// out (the temporary directory not writable, or full): a *TempDirError, which is not bad input.
func ResolveArgs(args []string) (paths []string, err error) {
	if len(args) == 0 {
		return []string{"scenarios"}, nil
	}
	paths = make([]string, len(args))
	for i, a := range args {
		p, rerr := Resolve(a)
		var no syscall.Errno
		switch {
		case rerr == nil:
			a = p
		case err == nil && errors.As(rerr, &no):
			err = &TempDirError{Err: rerr, Errno: no}
		}
		paths[i] = a
	}
	return paths, err
}

// TempDirError is a failure of the system to write the bundled scenarios out.
type TempDirError struct {
	Err   error
	Errno syscall.Errno
}

func (e *TempDirError) Error() string {
	name := errnoNames[e.Errno]
	if name != "" {
		name = " (" + name + ")"
	}
	return fmt.Sprintf("%v%s: set TMPDIR to a directory kalab can write, with room", e.Err, name)
}

func (e *TempDirError) Unwrap() error { return e.Err }

// errnoNames are the C names of the errors that make a temporary directory unusable.
var errnoNames = map[syscall.Errno]string{
	syscall.EACCES: "EACCES", syscall.EPERM: "EPERM", syscall.ENOSPC: "ENOSPC", syscall.EROFS: "EROFS",
	syscall.EDQUOT: "EDQUOT", syscall.ENOTDIR: "ENOTDIR", syscall.ENOENT: "ENOENT", syscall.ELOOP: "ELOOP",
}
