//go:build unix

package report

import (
	"os"
	"syscall"
)

// linked reports whether f still has a name: a results file whose directory was removed
// mid-run takes writes that nobody will ever read.
func linked(f file) bool {
	of, ok := f.(*os.File)
	if !ok {
		return true
	}
	st, err := of.Stat()
	if err != nil {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Nlink > 0
	}
	return true
}
