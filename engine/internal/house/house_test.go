package house

import (
	"bufio"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the module's root directory.
var root = filepath.Join("..", "..", "..")

const module = "github.com/kalab-dev/kalab"

// packages lists the module's package directories, relative to root, as go list sees them.
func packages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var dirs []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module+"/"); ok {
			dirs = append(dirs, rel)
		}
	}
	if len(dirs) < 20 {
		t.Fatalf("go list found %d packages: %v", len(dirs), dirs)
	}
	return dirs
}

// TestPackageSizes: no package grows past what one can read in a sitting, and the command
// line stays a thin layer over the engine.
func TestPackageSizes(t *testing.T) {
	t.Parallel()
	for _, dir := range packages(t) {
		n, err := CodeLines(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		limit := MaxPackageLines
		if dir == "cmd/kalab" {
			limit = MaxCommandLines
		}
		if n > limit {
			t.Errorf("%s: %d lines of code (at most %d): split it into rooms with one job each", dir, n, limit)
		}
	}
}

// TestFunctions: every function of every package is at most MaxFuncLines long and at most
// MaxFuncComplexity branched.
func TestFunctions(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, dir := range packages(t) {
		fs, err := Funcs(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			checked++
			if f.Lines > MaxFuncLines {
				t.Errorf("%s: %s is %d lines (at most %d)", f.Pos, f.Name, f.Lines, MaxFuncLines)
			}
			if f.Complexity > MaxFuncComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d (at most %d)", f.Pos, f.Name, f.Complexity, MaxFuncComplexity)
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d functions checked: the test does not see the module", checked)
	}
}

// TestRulesCanFail measures sources written to break each rule.
func TestRulesCanFail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := "package x\n\nfunc long() {\n" + strings.Repeat("\tprintln()\n", MaxFuncLines) + "}\n"
	branched := "package x\n\nfunc branched(a bool) {\n" + strings.Repeat("\tif a && a {\n\t}\n", MaxFuncComplexity/2) + "}\n"
	for name, src := range map[string]string{"long.go": long, "branched.go": branched, "x_test.go": long} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := Funcs(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Func{}
	for _, f := range fs {
		got[f.Name] = f
	}
	if len(got) != 2 || got["long"].Lines != MaxFuncLines+2 || got["branched"].Complexity != MaxFuncComplexity+1 {
		t.Errorf("measured %+v; want long at %d lines, branched at complexity %d, and no test file", got, MaxFuncLines+2, MaxFuncComplexity+1)
	}
	if n, err := CodeLines(dir); err != nil || n != 2*3+MaxFuncLines+MaxFuncComplexity {
		t.Errorf("CodeLines = %d, %v; want %d", n, err, 2*3+MaxFuncLines+MaxFuncComplexity)
	}
}

// deps lists the module packages dir imports, directly or not, from their non-test files.
func deps(t *testing.T, dir string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		p, err := build.ImportDir(filepath.Join(root, dir), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			walk(rel)
		}
	}
	walk(dir)
	return seen
}

// TestDataFlowsOneWay: the scenario language does not reach the rooms that run it, the
// reports do not reach back up to the scenario language, and the rooms the runner composes
// do not reach back up to it.
func TestDataFlowsOneWay(t *testing.T) {
	t.Parallel()
	seen := 0
	for dir, banned := range map[string][]string{
		"engine/scenario":             {"engine/execclient", "engine/client", "engine/runner", "engine/report", "engine/topology", "engine/compile"},
		"engine/compile":              {"engine/runner", "engine/topology", "engine/admit"},
		"engine/report":               {"engine/scenario", "engine/runner", "engine/execclient", "engine/topology"},
		"engine/report/baseline":      {"engine/scenario", "engine/runner", "engine/execclient", "engine/topology"},
		"cmd/kalab/internal/terminal": {"engine/scenario", "engine/runner", "engine/execclient", "engine/topology"},
		"engine/topology":             {"engine/runner", "engine/admit"},
		"engine/judge":                {"engine/runner", "engine/topology", "engine/admit"},
		"engine/admit":                {"engine/runner", "engine/topology"},
		"engine/shape":                {"engine/runner", "engine/topology", "engine/judge"},
		"engine/configure":            {"engine/runner", "engine/topology", "engine/judge", "engine/report"},
		"engine/gate":                 {"engine/runner", "engine/scenario", "engine/report"},
		"engine/oracle":               {"engine/runner", "engine/scenario", "engine/report"},
		"engine/explain":              {"engine/runner", "engine/scenario"},
		"cmd/kalab/internal/diff":     {"engine/runner", "engine/topology"},
		"cmd/kalab/internal/ci":       {"engine/runner", "engine/scenario"},
	} {
		got := deps(t, dir)
		seen += len(got)
		for _, b := range banned {
			if got[b] {
				t.Errorf("%s imports %s", dir, b)
			}
		}
	}
	if seen < 50 {
		t.Fatalf("the walk found %d imports in all: it does not see the packages", seen)
	}
}

// TestArchitecturePage: docs/architecture.md names every package of the module, each as its
// directory with a trailing slash at the start of a line of its layout, and names none that
// is gone.
func TestArchitecturePage(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^((?:cmd|engine|schema|scenarios)/[a-z0-9/]*?)/?\s`).FindAllStringSubmatch(string(page), -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	have := map[string]bool{}
	for _, dir := range packages(t) {
		have[dir] = true
		if !listed[dir] {
			t.Errorf("docs/architecture.md does not list %s/ (one line: the directory, then its one job)", dir)
		}
	}
	for dir := range listed {
		if !have[dir] {
			t.Errorf("docs/architecture.md lists %s/, which is not a package", dir)
		}
	}
}

// history is what a comment or a page must not say: our own issue numbers, the notes the
// code was built from (files outside the repository), a commit or a past day as the story
// of how something came to be. An upstream project's issue (owner/repo#N) is a source, not
// history, and stays.
var history = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(^|[^/\w])(issue|task|ticket)s? #?\d+`),
	regexp.MustCompile(`\b(DESIGN|PRESETS|STYLE|VIRTUAL-TIME|DEVELOPERS)\.md\b`),
	regexp.MustCompile(`\.\./shared/`),
	regexp.MustCompile(`(?i)\b(on|at|since|before|after) (main|commit) \(?[0-9a-f]{7,40}\b`),
	regexp.MustCompile(`(?i)\bthis (session|morning)\b|\bon the code of\b`),
}

// TestNoHistory: Go comments and the docs speak of the code, not of its history.
func TestNoHistory(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "results" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, hit := range historyIn(t, f) {
			t.Errorf("%s: %s", hit, "speaks of history, not of the code")
		}
	}
	if len(files) < 100 {
		t.Fatalf("only %d files read", len(files))
	}
}

// historyIn returns "file:line: text" for each line of f that matches history: in a Go
// file, only its comments.
func historyIn(t *testing.T, f string) []string {
	t.Helper()
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasSuffix(f, ".go") {
			i := strings.Index(l, "//")
			if i < 0 || f == filepath.Join(root, "engine", "internal", "house", "house_test.go") {
				continue
			}
			l = l[i:]
		}
		for _, re := range history {
			if re.MatchString(l) {
				out = append(out, fmt.Sprintf("%s:%d: %s", f, n, strings.TrimSpace(l)))
				break
			}
		}
	}
	return out
}

// TestHistoryCanFail: each pattern catches the kind of line it is there for, and lets an
// upstream source through.
func TestHistoryCanFail(t *testing.T) {
	t.Parallel()
	caught := []string{"// Issue 36 took the read away", "see DESIGN.md", "measured on main (3b28550)", "// fixed in task 12", "on the code of that morning"}
	passed := []string{"// golang/go#27753 and #81646", "nodejs/node PR #54863", "docs/reference/presets.md", "// 36 issues of the log"}
	match := func(l string) bool {
		for _, re := range history {
			if re.MatchString(l) {
				return true
			}
		}
		return false
	}
	for _, l := range caught {
		if !match(l) {
			t.Errorf("%q is not caught", l)
		}
	}
	for _, l := range passed {
		if match(l) {
			t.Errorf("%q is caught", l)
		}
	}
}

// TestRecipes: every file docs/architecture.md's recipes name exists, and every declaration
// they name in a file ("`Name` in `path`", "`path` (`Name`)", "`Name` (`path`)") is
// declared there: a top-level name, a method, or a field or entry at the start of a line.
func TestRecipes(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, recipes, ok := strings.Cut(string(page), "## Recipes")
	if !ok {
		t.Fatal("docs/architecture.md has no Recipes section")
	}
	recipes, _, _ = strings.Cut(recipes, "\n## ")
	recipes = strings.Join(strings.Fields(recipes), " ") // a reference may wrap
	path := `((?:engine|cmd|scenarios|docs)/[\w./-]+)`
	files := regexp.MustCompile("`"+path+"`").FindAllStringSubmatch(recipes, -1)
	for _, m := range files {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("a recipe names %s: %v", m[1], err)
		}
	}
	named := 0
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile("`(\\w+)` in `" + path + "`"),
		regexp.MustCompile("`(\\w+)` \\(`" + path + "`\\)"),
	} {
		for _, m := range re.FindAllStringSubmatch(recipes, -1) {
			named++
			declared(t, m[1], m[2])
		}
	}
	for _, m := range regexp.MustCompile("`"+path+"` \\(`(\\w+)`\\)").FindAllStringSubmatch(recipes, -1) {
		named++
		declared(t, m[2], m[1])
	}
	if len(files) < 10 || named < 8 {
		t.Fatalf("read %d files and %d declarations from the recipes: the patterns do not see them", len(files), named)
	}
}

// declared fails unless file declares name.
func declared(t *testing.T, name, file string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Errorf("a recipe names %s in %s: %v", name, file, err)
		return
	}
	decl := regexp.MustCompile(`(?m)^(func|type|var|const)\s+(\([^)]*\)\s*)?` + name + `\b|^\t` + name + `\b`)
	if !decl.Match(src) {
		t.Errorf("a recipe names %s in %s, which does not declare it", name, file)
	}
}
