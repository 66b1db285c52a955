package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/runner"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const good = `name: two
client: {preset: node-agent}
load: {requests: 4}
variants:
  - {name: a, expect: ["errors == 0"]}
  - {name: b, client: {exec: node-agent}, expect: ["errors == 0", "connections == 1"]}
compare:
  - "variant('a').errors == variant('b').errors"
`

func TestValidPlan(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "two.yaml", good)
	doc := NewDocument([]string{dir}, runner.CheckOptions{})
	if !doc.Valid || doc.Runs != 2 || len(doc.Scenarios) != 1 || doc.Scenarios[0] != (Scenario{"two", p, 2, 4}) {
		t.Fatalf("document %+v", doc)
	}
	plan, files, err := Load([]string{dir}, runner.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	Summary(&b, plan, files)
	for _, want := range []string{
		"1 file valid, 2 runs\n",
		"kalab run would start these programs (kalab validate starts none):",
		p + ":6:",
		"two/b",
		"1 run start programs: kalab run refuses it without --allow-exec=bundled",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// A problem in a file is a diagnostic at its line and column; a path that does not exist is
// the document's error, with no files.
func TestProblems(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "bad.yaml", "name: bad\nload: {requests: -1}\n")
	doc := NewDocument([]string{p}, runner.CheckOptions{})
	if doc.Valid || len(doc.Problems) == 0 || doc.Problems[0].Line != 2 || doc.Problems[0].File != p {
		t.Fatalf("document %+v", doc)
	}
	doc = NewDocument([]string{filepath.Join(dir, "missing.yaml")}, runner.CheckOptions{})
	if doc.Valid || doc.Error == "" || len(doc.Files) != 0 {
		t.Fatalf("a missing path: %+v", doc)
	}
}
