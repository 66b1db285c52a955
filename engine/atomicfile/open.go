package atomicfile

import (
	"os"
)

// Open opens path to read, refusing anything but a regular file with a *RefusedError: a
// FIFO would block the open (or the read) until something writes to it, and a device may
// never end. The path is checked before it is opened, and the opened file again after, so a
// file swapped in between is refused as well.
func Open(path string) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, refusedRead(path, st.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // the error returned says what failed
		return nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close() // the error returned says what failed
		return nil, refusedRead(path, st.Mode())
	}
	return f, nil
}

func refusedRead(path string, m os.FileMode) error {
	return &RefusedError{Path: path, Reason: "is " + kind(m) + ", not a regular file; kalab reads only regular files"}
}
