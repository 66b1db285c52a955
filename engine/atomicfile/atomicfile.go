// Package atomicfile writes report files so that a reader sees the old file or the whole new
// one, never half of either, and never writes through anything but a regular file.
//
// A file is written to a temporary file in the target's own directory (so the rename cannot
// cross file systems), synced, and renamed over the target; the directory is synced after.
// The target must be missing or a regular file: a symlink, directory, device, FIFO or socket
// at the path is refused, so `--junit /dev/full` or `--junit /dev/stdout` is an error instead
// of a device node replaced by a file. Check does the same tests (and proves the directory
// writable) before a long run, so a bad path is found before the first run, not after the last.
// Open is the readers' side of the same rule: a result file that is a FIFO or a device is
// refused at once instead of blocking the reader.
//
// The engine and the command line both use it; it is kalab's own, not a stable API for
// other modules.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// RefusedError is a target kalab will not write: what is at the path, or a directory that
// cannot receive it. Callers treat it as bad input (exit 2).
type RefusedError struct {
	Path   string
	Reason string
}

// Error names the path and why it is refused.
func (e *RefusedError) Error() string { return e.Path + ": " + e.Reason }

// kind describes a file mode for a message.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// checkTarget refuses anything at path but a regular file; a missing path is fine.
func checkTarget(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &RefusedError{Path: path, Reason: unwrap(err).Error()}
	}
	if !st.Mode().IsRegular() {
		return &RefusedError{Path: path, Reason: "is " + kind(st.Mode()) + "; kalab writes only regular files (give a file path)"}
	}
	return nil
}

// Check reports whether Write could replace path: the target is missing or a regular file,
// and its directory exists and accepts a new file (proved by creating and removing one, since
// permission bits do not tell root about a read-only file system).
func Check(path string) error {
	if err := checkTarget(path); err != nil {
		return err
	}
	return CheckDir(filepath.Dir(path))
}

// CheckDir reports whether files can be created in dir.
func CheckDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return &RefusedError{Path: dir, Reason: unwrap(err).Error()}
	}
	if !st.IsDir() {
		return &RefusedError{Path: dir, Reason: "is not a directory"}
	}
	f, err := os.CreateTemp(dir, ".kalab-probe-*")
	if err != nil {
		return &RefusedError{Path: dir, Reason: "cannot create files there: " + unwrap(err).Error()}
	}
	name := f.Name()
	// an empty probe file: only whether it could be created matters
	_ = f.Close()
	_ = os.Remove(name)
	return nil
}

// Mode is the permission every file kalab writes for the user (results, requests, JUnit,
// HTML) is created with: the process's umask then applies, as for any program (0644
// under the usual 022, 0664 under 002), and others never get write permission, whatever
// the umask.
const Mode fs.FileMode = 0o664

// DirMode is Mode for the directories that hold them.
const DirMode fs.FileMode = 0o775

// File is a report file being written: writes go to a temporary file beside the target
// until Commit renames it into place. Abort (or a failed Commit) removes the temporary file.
type File struct {
	path string
	tmp  *os.File
	done bool
}

// Create starts writing path. The target is checked now and again at Commit.
func Create(path string) (*File, error) {
	if err := checkTarget(path); err != nil {
		return nil, err
	}
	tmp, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, unwrap(err))
	}
	return &File{path: path, tmp: tmp}, nil
}

// createTemp creates a new file named prefix and a random suffix in dir with Mode (as
// os.CreateTemp does, but os.CreateTemp makes every file 0600, whatever the umask).
func createTemp(dir, prefix string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, Mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"), Err: fs.ErrExist}
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.tmp.Write(p) }

// Name is the target path.
func (f *File) Name() string { return f.path }

// Commit syncs the temporary file and renames it over the target, which must still be
// missing or a regular file; then it syncs the directory so the rename survives a crash.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.path)
	}
	f.done = true
	name := f.tmp.Name()
	err := f.tmp.Sync()
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkTarget(f.path)
	}
	if err == nil {
		err = os.Rename(name, f.path)
	}
	if err != nil {
		_ = os.Remove(name) // the error returned says what failed
		var re *RefusedError
		if errors.As(err, &re) {
			return err
		}
		return fmt.Errorf("write %s: %w", f.path, unwrap(err))
	}
	if err := SyncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("write %s: sync its directory: %w", f.path, unwrap(err))
	}
	return nil
}

// Abort drops the temporary file; the target is untouched. It is safe after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	name := f.tmp.Name()
	// aborted: the temporary file is thrown away
	_ = f.tmp.Close()
	_ = os.Remove(name)
}

// Write writes path in one go: fill writes the content, and the file replaces the target only
// when fill and every write, sync and rename succeeded.
func Write(path string, fill func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// SyncDir fsyncs a directory, so that the entries created or renamed in it are on disk.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	// Some file systems cannot sync a directory; the rename itself has still happened.
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
