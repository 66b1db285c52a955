//go:build unix

package scenarios

import (
	"io/fs"
	"os"
	"syscall"
)

// lockedToMe reports whether the file's owner is this process's effective user and neither
// its group nor others may write it.
func lockedToMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}
