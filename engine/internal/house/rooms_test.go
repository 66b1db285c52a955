package house

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// importers maps each module package (relative to root) to the other module packages that
// import it, from their code or their tests, as go list sees them.
func importers(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	by := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from, ok := strings.CutPrefix(f[0], module+"/")
		if !ok {
			continue
		}
		if _, ok := by[from]; !ok {
			by[from] = nil
		}
		seen := map[string]bool{from: true}
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && !seen[rel] {
				seen[rel] = true
				by[rel] = append(by[rel], from)
			}
		}
	}
	return by
}

// side is the part of the module a package belongs to: "engine" (the engine, the helpers
// and test kits it shares with the command line, and under engine/internal its own), "cmd"
// (the command line and its rooms under cmd/kalab/internal), or the first directory of any
// other path.
func side(dir string) string {
	first, _, _ := strings.Cut(dir, "/")
	return first
}

// misplaced returns, for each package in the wrong part of the module, what is wrong: an
// engine/ package that only the command line imports, or a package in a root internal/,
// which the layout does not have (what both sides share is an ordinary engine/ package,
// what only the engine needs goes under engine/internal/, what only the command line needs
// under cmd/kalab/internal/). Packages no one imports (engine/kalabtest, a library for
// users' own tests; the house's own rules) are judged only by where they are.
func misplaced(by map[string][]string) []string {
	var bad []string
	for dir, from := range by {
		if side(dir) == "internal" {
			bad = append(bad, dir+" is in a root internal/, which the module's layout does not have: a package both sides use belongs in engine/ (a test kit in engine/testkit/), one only the engine uses under engine/internal/, one only the command line uses under cmd/kalab/internal/")
			continue
		}
		if side(dir) != "engine" || len(from) == 0 {
			continue
		}
		engine := false
		for _, f := range from {
			engine = engine || side(f) == "engine"
		}
		if !engine {
			bad = append(bad, dir+" is imported only by the command line ("+strings.Join(from, ", ")+"): it belongs under cmd/kalab/internal/")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestEachPackageInItsPart: code only the command line uses lives under cmd/kalab/internal
// (Go keeps it out of anyone else's reach), not in the engine; what the engine and the
// command line share (engine/atomicfile, engine/testkit/testci, ...) is an engine/ package;
// and the module has no root internal/ directory, package or not.
func TestEachPackageInItsPart(t *testing.T) {
	t.Parallel()
	by := importers(t)
	if len(by["engine/report"]) < 10 || len(by["engine/scenario"]) < 10 {
		t.Fatalf("go list found %d importers of engine/report and %d of engine/scenario: the test does not see the imports", len(by["engine/report"]), len(by["engine/scenario"]))
	}
	for _, b := range misplaced(by) {
		t.Error(b)
	}
	if _, err := os.Lstat(filepath.Join(root, "internal")); err == nil {
		t.Error("the module has a root internal/ directory, which its layout does not have: a package both sides use belongs in engine/ (a test kit in engine/testkit/)")
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// TestMisplacedCanFail: each kind of misplaced package is found; an engine package that an
// engine package or test imports stays, a shared helper or test kit in engine/ that both
// sides import stays, and one that only the command line imports is found.
func TestMisplacedCanFail(t *testing.T) {
	t.Parallel()
	by := map[string][]string{
		"engine/onlycmd":          {"cmd/kalab", "cmd/kalab/internal/x"},
		"engine/testedby":         {"cmd/kalab", "engine/runner"},
		"engine/runner":           {"cmd/kalab", "engine/kalabtest"},
		"engine/kalabtest":        nil,
		"engine/both":             {"engine/report", "cmd/kalab"},
		"engine/testkit/both":     {"engine/runner", "cmd/kalab/internal/x"},
		"engine/testkit/onlycmd":  {"cmd/kalab/internal/x"},
		"engine/internal/onlyeng": {"engine/runner"},
		"cmd/kalab/internal/x":    {"cmd/kalab"},
		"internal/both":           {"engine/report", "cmd/kalab"},
		"internal/nobody":         nil,
	}
	got := misplaced(by)
	want := []string{"engine/onlycmd ", "engine/testkit/onlycmd ", "internal/both ", "internal/nobody "}
	if len(got) != len(want) {
		t.Fatalf("misplaced: %q; want the %d beginning %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("misplaced[%d] = %q; want it to begin %q", i, got[i], want[i])
		}
	}
}
