package childenv

import (
	"slices"
	"strings"
	"testing"
)

// For keeps the allowlist, the scenario's entries and the protocol's, and nothing else;
// a later source replaces an earlier one's value.
func TestFor(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
	t.Setenv("HOME", "/home/kalab")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("PASS_ME", "from-kalab")
	t.Setenv("KALAB_URL", "kalab's own, not the child's")
	got := For([]string{"PASS_ME", "SET_ME=a=b", "UNSET_IN_KALAB", "LANG=fr_FR.UTF-8"}, []string{"KALAB_URL=http://127.0.0.1:1/"})
	for _, want := range []string{"HOME=/home/kalab", "LANG=fr_FR.UTF-8", "PASS_ME=from-kalab", "SET_ME=a=b", "KALAB_URL=http://127.0.0.1:1/"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing from %q", want, got)
		}
	}
	names := map[string]int{}
	for _, e := range got {
		name, _, _ := strings.Cut(e, "=")
		names[name]++
		if names[name] > 1 {
			t.Errorf("%s appears twice in %q", name, got)
		}
		if !slices.Contains(Inherited(), name) && !slices.Contains([]string{"PASS_ME", "SET_ME", "KALAB_URL"}, name) {
			t.Errorf("%s is in the child's environment; only the allowlist, env: and KALAB_* may be: %q", name, got)
		}
	}
	if names["UNSET_IN_KALAB"] != 0 {
		t.Errorf("a name kalab has no value for was passed: %q", got)
	}
}
