package findings

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the README and docs/ from results/ (review the diff)")

const root = "../../.."

// TestFindings: the figures the README, docs/findings.md and docs/clocks.md quote of the
// bundled suite are what their templates render from the committed results; -update
// rewrites the pages.
func TestFindings(t *testing.T) {
	if *update {
		changed, err := Write(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range changed {
			t.Logf("%s rewritten", f)
		}
		return
	}
	drifts, err := Stale(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drifts {
		t.Error(d)
	}
}

func TestGrouped(t *testing.T) {
	for _, c := range []struct {
		v    float64
		d    int
		want string
	}{{1149.84, 1, "1,149.8"}, {-0.04, 1, "0.0"}, {-1234.5, 2, "-1,234.50"}, {12, 3, "12.000"}, {999.96, 1, "1,000.0"}} {
		if got := Grouped(c.v, c.d); got != c.want {
			t.Errorf("Grouped(%v, %d) = %q, want %q", c.v, c.d, got, c.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", -0.3: "0", 999: "999", 1000: "1,000", 4971: "4,971", 1234567.5: "1,234,568", -2500: "-2,500"} {
		if got := Thousands(v); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

// copyRoot copies the pages and results the templates read into a new directory.
func copyRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"README.md", "docs/findings.md", "docs/clocks.md", BaselineFile, ClocksRealFile} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFindingsCanFail: a figure typed by hand into the README is caught at its line, with
// the command that rewrites it, and the rewrite puts the baseline's figure back.
func TestFindingsCanFail(t *testing.T) {
	dir := copyRoot(t)
	readme := filepath.Join(dir, "README.md")
	edit(t, readme, "total cut 2.14x", "total cut 2.2x")
	drifts, err := Stale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(drifts) != 1 || drifts[0].Section.File != "README.md" {
		t.Fatalf("want one drift, in README.md; got %v", drifts)
	}
	msg := drifts[0].Error()
	for _, s := range []string{"README.md:", "total cut 2.2x", "total cut 2.14x", Command} {
		if !strings.Contains(msg, s) {
			t.Errorf("the message does not say %q:\n%s", s, msg)
		}
	}
	if changed, err := Write(dir); err != nil || len(changed) != 1 {
		t.Fatalf("Write: %v, %v", changed, err)
	}
	if drifts, err := Stale(dir); err != nil || len(drifts) != 0 {
		t.Fatalf("after Write: %v, %v", drifts, err)
	}
}

// TestFiguresFollowTheBaseline: a count changed in the baseline changes the page's figure.
func TestFiguresFollowTheBaseline(t *testing.T) {
	dir := copyRoot(t)
	base := filepath.Join(dir, BaselineFile)
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"scenario":"pool-thrash"`) && strings.Contains(l, `"variant":"idle-2"`) {
			lines[i] = strings.Replace(l, `"connections":402,`, `"connections":1402,`, 1)
		}
	}
	if err := os.WriteFile(base, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "| 1,402 connections for 500 requests vs 10 |") {
		t.Error("the README does not quote the baseline's 1,402 connections")
	}
}
