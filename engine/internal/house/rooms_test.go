package house

import (
	"os/exec"
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

// side is the part of the module a package belongs to: "engine", "cmd", or "internal"
// (the helpers both share).
func side(dir string) string {
	first, _, _ := strings.Cut(dir, "/")
	return first
}

// misplaced returns, for each package in the wrong part of the module, what is wrong: an
// engine/ package that only the command line imports, a shared internal/ package only one
// side imports. An internal/ importer counts for the sides that import it. Packages no one
// imports (engine/kalabtest, a library for users' own tests; the house's own rules) are
// not judged.
func misplaced(by map[string][]string) []string {
	var sides func(dir string, seen map[string]bool) map[string]bool
	sides = func(dir string, seen map[string]bool) map[string]bool {
		got := map[string]bool{}
		for _, from := range by[dir] {
			if side(from) != "internal" {
				got[side(from)] = true
			} else if !seen[from] {
				seen[from] = true
				for s := range sides(from, seen) {
					got[s] = true
				}
			}
		}
		return got
	}
	var bad []string
	for dir, from := range by {
		if len(from) == 0 {
			continue
		}
		s := sides(dir, map[string]bool{dir: true})
		switch {
		case side(dir) == "engine" && !s["engine"]:
			bad = append(bad, dir+" is imported only by the command line ("+strings.Join(from, ", ")+"): it belongs under cmd/kalab/internal/")
		case side(dir) == "internal" && !s["engine"]:
			bad = append(bad, dir+" is imported only by the command line ("+strings.Join(from, ", ")+"): it belongs under cmd/kalab/internal/")
		case side(dir) == "internal" && !s["cmd"]:
			bad = append(bad, dir+" is imported only by the engine ("+strings.Join(from, ", ")+"): it belongs under engine/internal/")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestEachPackageInItsPart: code only the command line uses lives under cmd/kalab/internal
// (Go keeps it out of anyone else's reach), not in the engine; what the engine and the
// command line share lives in the module's internal/.
func TestEachPackageInItsPart(t *testing.T) {
	t.Parallel()
	by := importers(t)
	if len(by["engine/report"]) < 10 || len(by["engine/scenario"]) < 10 {
		t.Fatalf("go list found %d importers of engine/report and %d of engine/scenario: the test does not see the imports", len(by["engine/report"]), len(by["engine/scenario"]))
	}
	for _, b := range misplaced(by) {
		t.Error(b)
	}
}

// TestMisplacedCanFail: each kind of misplaced package is found; an engine package that an
// engine test imports stays, and a shared helper counts for the sides that import it.
func TestMisplacedCanFail(t *testing.T) {
	t.Parallel()
	by := map[string][]string{
		"engine/onlycmd":   {"cmd/kalab", "cmd/kalab/internal/x"},
		"engine/testedby":  {"cmd/kalab", "engine/runner"},
		"engine/runner":    {"cmd/kalab", "engine/kalabtest"},
		"engine/kalabtest": nil,
		"internal/onlycmd": {"cmd/kalab/internal/x"},
		"internal/onlyeng": {"engine/runner"},
		"internal/both":    {"engine/report", "cmd/kalab"},
		"internal/viaboth": {"internal/both"},
		"internal/viaeng":  {"internal/onlyeng", "cmd/kalab"},
	}
	got := misplaced(by)
	want := []string{"engine/onlycmd ", "internal/onlycmd ", "internal/onlyeng "}
	if len(got) != len(want) {
		t.Fatalf("misplaced: %q; want the three beginning %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("misplaced[%d] = %q; want it to begin %q", i, got[i], want[i])
		}
	}
}
