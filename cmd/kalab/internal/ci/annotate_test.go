package ci

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
)

func TestAnnotationsPointAtTheExpectation(t *testing.T) {
	t.Parallel()
	in := failingInput()
	var buf bytes.Buffer
	if err := Annotations(&buf, in.Runs, in.Scenarios, ""); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"::error file=reuse.yaml,line=9,col=5,title=kalab%3A reuse / close::FAIL connections == 1 (connections=200)",
		"::error file=reuse.yaml,line=1,col=1,title=kalab%3A reuse / close::FAIL total_ms <= 34100 (baseline 31000 +10%25) (baseline=31000, total_ms=90000)",
		"::error file=stale.yaml,title=kalab%3A stale / a::error: listen tcp 127.0.0.1:0: too many open files <&> ]]> \x01",
		"::error file=reuse.yaml,line=12,col=5,title=kalab%3A reuse (compare)::FAIL variant('close').total_ms > 2 * variant('keepalive').total_ms (variant('close').total_ms=40000, variant('keepalive').total_ms=31000)",
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("annotations:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
}

func TestAnnotationEscaping(t *testing.T) {
	t.Parallel()
	r := baseRun("s", "a,b:c")
	r.File = "/ws/scen arios/s,1.yaml"
	r.Checks = []report.Check{{Kind: "expect", Expr: "errors == 0\n|| 100% sure", Pass: false, File: r.File, Line: 3, Col: 7}}
	var buf bytes.Buffer
	if err := Annotations(&buf, []*report.Run{r}, nil, "/ws"); err != nil {
		t.Fatal(err)
	}
	want := "::error file=scen arios/s%2C1.yaml,line=3,col=7,title=kalab%3A s / a%2Cb%3Ac::FAIL errors == 0%0A|| 100%25 sure\n"
	if buf.String() != want {
		t.Fatalf("got  %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	if err := AnnotateMissing(&buf, []gate.RunDiff{{Scenario: "s", Variant: "v", File: "s.yaml"}}, false, ""); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "::warning file=s.yaml,title=kalab%3A s / v::in the baseline but did not run\n" {
		t.Fatalf("missing: %q", buf.String())
	}
}

// TestAnnotationPathsFromTheWorkspace: a file named relative to where kalab ran, below the
// workspace, is annotated relative to the workspace, as GitHub resolves file=; an absolute
// one under it too; one outside it is left as it is.
func TestAnnotationPathsFromTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	sub := filepath.Join(ws, "svc")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	for file, want := range map[string]string{
		"scenarios/a.yaml":          "svc/scenarios/a.yaml",
		filepath.Join(ws, "b.yaml"): "b.yaml",
		"/elsewhere/c.yaml":         "/elsewhere/c.yaml",
	} {
		if got := relTo(ws, file); got != want {
			t.Errorf("%s: %s, want %s", file, got, want)
		}
	}
	if got := relTo("", "scenarios/a.yaml"); got != "scenarios/a.yaml" {
		t.Errorf("no workspace: %s", got)
	}
}
