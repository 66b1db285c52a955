// Package house measures the code base against its own rules: how large a package may grow,
// how long and how branched a function may be, and which packages the architecture page
// must name. Its tests apply the rules to the whole module.
package house

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Limits of the house.
const (
	MaxFuncLines      = 80   // lines of one function, signature to closing brace
	MaxFuncComplexity = 20   // gocyclo's count
	MaxPackageLines   = 2000 // lines of code of one package (CodeLines)
	MaxCommandLines   = 1500 // lines of code of the command line (cmd/kalab)
)

// CodeLines counts the lines of a package's non-test Go files that are neither blank nor
// only a // comment.
func CodeLines(dir string) (int, error) {
	files, err := sourceFiles(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l != "" && !strings.HasPrefix(l, "//") {
				n++
			}
		}
		_ = fh.Close() // read only: a failed close loses nothing
		if err := sc.Err(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// sourceFiles lists dir's non-test Go files.
func sourceFiles(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out, nil
}

// Func is one function and what the rules measure of it.
type Func struct {
	Pos        token.Position
	Name       string
	Lines      int
	Complexity int
}

// Funcs measures every function of dir's non-test Go files.
func Funcs(dir string) ([]Func, error) {
	files, err := sourceFiles(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []Func
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			out = append(out, Func{Pos: fset.Position(fd.Pos()), Name: fd.Name.Name,
				Lines:      fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1,
				Complexity: Complexity(fd)})
		}
	}
	return out, nil
}

// Complexity is gocyclo's count: 1, plus one per if, for, range, non-default case and
// select clause, && and ||. Function literals count toward the function that holds them.
func Complexity(fd *ast.FuncDecl) int {
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
