package buildinfo

import (
	"strings"
	"testing"
)

// The binary's own build info is tested in .ci/run (a build in the checkout must name its
// commit); this pins what each kind of build prints.
func TestVersionText(t *testing.T) {
	for _, c := range []struct {
		name        string
		v           Info
		short, long string
	}{
		{"tagged", Info{Module: "v1.2.0", Revision: "0123456789abcdef0123", Time: "2026-12-01T10:00:00Z"}, "v1.2.0", "commit 0123456789abcdef0123, 2026-12-01T10:00:00Z"},
		{"checkout with changes", Info{Module: "v0.0.0-20261201-0123456789ab+dirty", Revision: "0123456789abcdef0123", Modified: true}, "v0.0.0-20261201-0123456789ab+dirty", "commit 0123456789abcdef0123 (modified)"},
		{"commit only", Info{Revision: "0123456789abcdef0123", Modified: true}, "dev+0123456789ab-dirty", "commit 0123456789abcdef0123 (modified)"},
		{"nothing known", Info{}, "dev", "no module version or commit recorded"},
	} {
		if got := c.v.Short(); got != c.short {
			t.Errorf("%s: short %q, want %q", c.name, got, c.short)
		}
		if got := c.v.Long(); !strings.HasPrefix(got, "kalab "+c.short+"\n") || !strings.Contains(got, c.long) {
			t.Errorf("%s: long %q, want it to start with kalab %s and hold %q", c.name, got, c.short, c.long)
		}
	}
}
