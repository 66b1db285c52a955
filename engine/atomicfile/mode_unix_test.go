//go:build unix

package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file Write creates, or replaces, has the mode the umask leaves of 0664: readable by
// others under the usual 022 (a CI artifact uploader, a second user), 0600 under 077,
// and never writable by others, even under umask 0. Not parallel: the umask is the
// process's; it is restored before the parallel tests resume.
func TestModeFollowsUmask(t *testing.T) {
	for _, c := range []struct {
		umask int
		want  fs.FileMode
	}{{0o022, 0o644}, {0o002, 0o664}, {0o077, 0o600}, {0, 0o664}} {
		old := syscall.Umask(c.umask)
		dir := t.TempDir()
		p := filepath.Join(dir, "junit.xml")
		err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		if err == nil {
			// Replacing keeps following the umask, not the old file's mode.
			err = os.Chmod(p, 0o600)
		}
		if err == nil {
			err = Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "y"); return err })
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != c.want {
			t.Errorf("umask %03o: mode %03o, want %03o", c.umask, got, c.want)
		}
	}
}
