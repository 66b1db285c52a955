package runner

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The runner's structure targets: composition, not branches in one function.
const (
	maxFuncLines      = 80
	maxFuncComplexity = 20
)

// TestStructure parses the package's own (non-test) Go files and fails on any function
// longer than maxFuncLines or with a cyclomatic complexity over maxFuncComplexity.
func TestStructure(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			checked++
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if lines > maxFuncLines {
				t.Errorf("%s: %s is %d lines (at most %d)", fset.Position(fd.Pos()), fd.Name.Name, lines, maxFuncLines)
			}
			if c := complexity(fd); c > maxFuncComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d (at most %d)", fset.Position(fd.Pos()), fd.Name.Name, c, maxFuncComplexity)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no function checked: the test does not see the package's files")
	}
}

// complexity is gocyclo's count: 1, plus one per if, for, range, non-default case and
// select clause, && and ||. Function literals count toward the function that holds them.
func complexity(fd *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fd, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// TestComplexityCounts pins the counting rule on small sources.
func TestComplexityCounts(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]int{
		"func f() {}": 1,
		"func f(a, b bool) { if a && b || a {} }":                                 4,
		"func f(x int) { for range 3 {}; for {}; switch x { case 1: default: } }": 4,
		"func f(c chan int) { select { case <-c: default: } }":                    2,
		"func f() { g := func() { if true {} }; g() }":                            2,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := complexity(f.Decls[0].(*ast.FuncDecl)); got != want {
			t.Errorf("%s: complexity %d, want %d", src, got, want)
		}
	}
}

// deps lists the module packages pkg (a directory under engine/) imports, directly or not,
// from their non-test files.
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	const module = "github.com/kalab-dev/kalab/"
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		p, err := build.ImportDir(filepath.Join("..", "..", dir), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok || seen[rel] {
				continue
			}
			seen[rel] = true
			walk(rel)
		}
	}
	walk(pkg)
	return seen
}

// Data flows one way (docs/architecture.md): the scenario language does not reach the programs that
// run clients (execclient drags the model client in), and the reports do not reach back up
// to the scenario language.
func TestDataFlowsOneWay(t *testing.T) {
	t.Parallel()
	for pkg, banned := range map[string][]string{
		"engine/scenario": {"engine/execclient", "engine/client", "engine/runner", "engine/report"},
		"engine/report":   {"engine/scenario", "engine/runner", "engine/execclient"},
	} {
		got := deps(t, pkg)
		if len(got) == 0 {
			t.Fatalf("%s: no module imports found: the walk does not see the package", pkg)
		}
		for _, b := range banned {
			if got[b] {
				t.Errorf("%s imports %s", pkg, b)
			}
		}
	}
}
