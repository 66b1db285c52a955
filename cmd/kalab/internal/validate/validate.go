// Package validate loads scenario files with every check kalab run makes before it runs
// anything (the loader's, the real servers', the programs'), and describes what it found:
// kalab validate's table and JSON document.
package validate

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Load finds the scenario files under paths, loads them and checks the plan. files is nil
// when the paths themselves are wrong (err says why); otherwise err, when not nil, holds the
// problems in the files (a scenario.Diagnostics where they have positions).
func Load(paths []string, chk runner.CheckOptions) (plan *scenario.Plan, files []string, err error) {
	files, err = scenario.FindFiles(paths)
	if err != nil {
		return nil, nil, err
	}
	if files == nil {
		files = []string{}
	}
	plan, err = scenario.LoadFiles(files)
	if err == nil {
		if ds := runner.Check(plan, chk); len(ds) > 0 {
			err = ds
		}
	}
	if err != nil {
		return nil, files, err
	}
	return plan, files, nil
}

// checks counts a scenario's checks: its compare checks and its runs' expect checks.
func checks(s *scenario.Scenario) int {
	n := len(s.Compare)
	for _, r := range s.Runs {
		n += len(r.Expect)
	}
	return n
}

// Summary writes kalab validate's table: each scenario with its file, runs and checks, the
// count of files and runs, and the programs kalab run would start.
func Summary(w io.Writer, plan *scenario.Plan, files []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tFILE\tRUNS\tCHECKS")
	for _, s := range plan.Scenarios {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", s.Name, s.File, len(s.Runs), checks(s))
	}
	_ = tw.Flush() // output for a terminal, as the Fprint lines around it
	fmt.Fprintf(w, "%d file%s valid, %d run%s\n", len(files), plural(len(files)), plan.Runs(), plural(plan.Runs()))
	programs(w, runner.Programs(plan))
}

// programs tells what kalab run would start that validate does not: each run's
// programs, with the opt-in each needs.
func programs(w io.Writer, progs []runner.Program) {
	if len(progs) == 0 {
		fmt.Fprintln(w, "\nno run starts a program (kalab run needs no --allow-exec)")
		return
	}
	fmt.Fprintf(w, "\nkalab run would start these programs (kalab validate starts none):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  WHERE\tRUN\tFIELD\tPROGRAM\tNEEDS")
	needAll := false
	runs := map[string]bool{}
	for _, p := range progs {
		runs[p.Scenario+"/"+p.Variant] = true
		needs := "--allow-exec=bundled"
		if !p.Bundled {
			needs, needAll = "--allow-exec", true
		}
		where := p.File
		if p.Line > 0 {
			where = fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
		}
		fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\t%s\n", where, p.Scenario, p.Variant, p.Path, p.Command, needs)
	}
	_ = tw.Flush() // output for a terminal, as the Fprint lines around it
	need := "--allow-exec=bundled (or " + runner.EnvAllowExec + "=bundled)"
	if needAll {
		need = "--allow-exec (or " + runner.EnvAllowExec + "=1)"
	}
	fmt.Fprintf(w, "%d run%s start programs: kalab run refuses %s without %s\n", len(runs), plural(len(runs)), map[bool]string{true: "it", false: "them"}[len(runs) == 1], need)
}

// Document is `kalab validate --format json`.
type Document struct {
	Valid     bool                  `json:"valid"`
	Files     []string              `json:"files"`
	Runs      int                   `json:"runs"`
	Scenarios []Scenario            `json:"scenarios"`
	Problems  []scenario.Diagnostic `json:"problems"`
	Error     string                `json:"error,omitempty"` // a problem that is not in a file (a path that does not exist)
}

// Scenario is one scenario of a valid plan.
type Scenario struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Runs   int    `json:"runs"`
	Checks int    `json:"checks"`
}

// NewDocument loads and checks like Load, and describes the outcome; Valid says whether
// the input is.
func NewDocument(paths []string, chk runner.CheckOptions) Document {
	doc := Document{Files: []string{}, Scenarios: []Scenario{}, Problems: []scenario.Diagnostic{}}
	plan, files, err := Load(paths, chk)
	if files != nil {
		doc.Files = files
	}
	var ds scenario.Diagnostics
	switch {
	case errors.As(err, &ds):
		doc.Problems = append(doc.Problems, ds...)
	case err != nil:
		doc.Error = err.Error()
	default:
		doc.Valid, doc.Runs = true, plan.Runs()
		for _, s := range plan.Scenarios {
			doc.Scenarios = append(doc.Scenarios, Scenario{s.Name, s.File, len(s.Runs), checks(s)})
		}
	}
	return doc
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
