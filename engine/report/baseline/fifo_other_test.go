//go:build !unix

package baseline

import "testing"

// mkfifo: named pipes are a Unix thing; the tests that refuse one do not apply here.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skip("no named pipes on this platform") // skip: not Linux or macOS: CI runs the unix file
}
