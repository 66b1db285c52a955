package admit

import (
	"errors"

	"github.com/kalab-dev/kalab/engine/internal/startcheck"
)

// StartFiles is how many file descriptors kalab needs free to start at all
// (startcheck.Files).
const StartFiles = startcheck.Files

// CheckStart raises the soft descriptor limit to what starting needs and fails when even the
// hard limit leaves fewer than StartFiles free. It opens no file. The binary has already run
// it once, in startcheck's init, before any package could need a descriptor; a caller that
// is not the binary gets the same answer here.
func CheckStart() error {
	if msg := startcheck.Check(); msg != "" {
		return errors.New(msg)
	}
	return nil
}
