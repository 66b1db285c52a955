package report

import "testing"

// ValidateDir fails the test when any emitted line breaks result.schema.json.
func ValidateDir(t *testing.T, dir string) {
	t.Helper()
	if err := ValidateRunDir(dir); err != nil {
		t.Fatal(err)
	}
}
