package runner

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestEachRunCompiledOnce: Execute compiles each run the filter keeps exactly once, on
// either clock, and what it runs and records comes from that compiled run: a compiled run
// changed on its way (a note added, another seed) is the run recorded, so no step after the
// compile asks the settings again.
func TestEachRunCompiledOnce(t *testing.T) {
	src := `name: once
network: {rtt: 10ms}
client: {preset: node-agent}
load: {requests: 3, burst: 1, pause: 10ms..20ms, seed: 1}
variants:
  - {name: a}
  - {name: b, server: {idle_timeout: 5s}}
  - {name: skipped}
`
	var mu sync.Mutex
	calls := map[*scenario.Run]int{}
	compileRun = func(sc *scenario.Scenario, r *scenario.Run, opt compile.Options) *compile.Run {
		mu.Lock()
		calls[r]++
		mu.Unlock()
		c := compile.One(sc, r, opt)
		c.Notes = append(c.Notes, "compiled by the test")
		c.Settings.Load.Seed = 7
		return c
	}
	t.Cleanup(func() { compileRun = compile.One })
	for _, o := range []Options{virtualOpts(t), opts(t)} {
		p := plan(t, src)
		o.Filter = regexp.MustCompile(`^once/(a|b)$`)
		out, err := Execute(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		skipIfNoisy(t, out)
		for _, r := range p.Scenarios[0].Runs {
			want := 1
			if r.Variant == "skipped" {
				want = 0
			}
			if calls[r] != want {
				t.Errorf("virtual host %v: %s compiled %d times, want %d", o.Host != nil, r.Variant, calls[r], want)
			}
		}
		if len(out.Runs) != 2 {
			t.Fatalf("%d runs recorded, want 2", len(out.Runs))
		}
		for _, rec := range out.Runs {
			if rec.Status != report.StatusPass || rec.Seed != 7 || !slices.Contains(rec.Notes, "compiled by the test") {
				t.Errorf("%s on the %s clock: %s %q, seed %d, notes %q: not the compiled run", rec.Variant, rec.Clock, rec.Status, rec.Error, rec.Seed, rec.Notes)
			}
		}
	}
}

// TestExecuteCompiledReadsTheCallersRuns: runs the caller compiled (kalab run compiles
// its plan once, before its warnings) are the runs that go: none is compiled again.
func TestExecuteCompiledReadsTheCallersRuns(t *testing.T) {
	p := plan(t, `name: given
load: {requests: 2}
variants: [{name: a}, {name: b}]
`)
	o := virtualOpts(t)
	runs := compile.Plan(p, o.Compile())
	for _, c := range runs {
		c.Notes = append(c.Notes, "compiled by the caller")
	}
	compiles := 0
	compileRun = func(sc *scenario.Scenario, r *scenario.Run, opt compile.Options) *compile.Run {
		compiles++
		return compile.One(sc, r, opt)
	}
	t.Cleanup(func() { compileRun = compile.One })
	out, err := ExecuteCompiled(context.Background(), p, runs, o)
	if err != nil {
		t.Fatal(err)
	}
	if compiles != 0 {
		t.Errorf("%d runs compiled again, want none", compiles)
	}
	for _, rec := range out.Runs {
		if rec.Status != report.StatusPass || !slices.Contains(rec.Notes, "compiled by the caller") {
			t.Errorf("%s: %s %q, notes %q: not the caller's compiled run", rec.Variant, rec.Status, rec.Error, rec.Notes)
		}
	}
	if len(out.Runs) != 2 {
		t.Errorf("%d runs, want 2", len(out.Runs))
	}
}

// TestRunnerAsksTheCompiledRun: of the runner's files only the compile hook calls the compile
// step, and only the check of a file's real server (before any run, from the file's own
// settings) reads engine/configure or engine/shape: the rest reads the compiled run.
func TestRunnerAsksTheCompiledRun(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	compiles, seen := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		seen++
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"/engine/configure", "/engine/shape", "/engine/load", "/engine/oracle"} {
				if strings.HasSuffix(path, banned) && f != "realserver.go" && !(banned == "/engine/oracle" && f == "reach.go") {
					t.Errorf("%s imports %s: read the compiled run (engine/compile) instead", f, path)
				}
			}
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "compile" && (sel.Sel.Name == "One" || sel.Sel.Name == "Plan") {
					compiles++
				}
			}
			return true
		})
	}
	if seen < 10 {
		t.Fatalf("%d files read: not the runner's", seen)
	}
	if compiles != 1 {
		t.Errorf("the runner names the compile step %d times; want once, in compileRun", compiles)
	}
}
