package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/buildinfo"
)

// TestInitPinsTheWorkflow: the workflow kalab init writes builds the kalab that wrote it:
// its release tag, else its commit; main only when it does not know its origin.
func TestInitPinsTheWorkflow(t *testing.T) {
	for _, c := range []struct {
		info buildinfo.Info
		want string
	}{
		{buildinfo.Info{Stamped: "v0.4.0", Revision: "0123456789abcdef0123456789abcdef01234567"}, "v0.4.0"},
		{buildinfo.Info{Revision: "0123456789abcdef0123456789abcdef01234567"}, "0123456789abcdef0123456789abcdef01234567"},
		{buildinfo.Info{Revision: "0123456789abcdef0123456789abcdef01234567", Modified: true}, "main"},
		{buildinfo.Info{}, "main"},
	} {
		if got := c.info.Ref(); got != c.want {
			t.Errorf("%+v: ref %s, want %s", c.info, got, c.want)
		}
	}
	dir := t.TempDir()
	var out, errb strings.Builder
	if code := Main([]string{"init", dir}, &out, &errb); code != exitOK {
		t.Fatalf("kalab init: exit %d: %s", code, errb.String())
	}
	wf, err := os.ReadFile(filepath.Join(dir, ".github", "workflows", "kalab.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := "          ref: " + buildinfo.Read(version, commit).Ref() + "\n"
	if !strings.Contains(string(wf), want) || strings.Contains(string(wf), "KALAB_REF") {
		t.Errorf("the workflow does not pin its ref (%q):\n%s", want, wf)
	}
}
