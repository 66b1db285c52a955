package ci

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
)

// Annotations writes a GitHub Actions ::error workflow command for each failed check
// (expect, compare and baseline regressions) and each run that could not complete, and a
// ::warning for each run not run here and each check not evaluated, so the failure or the
// missing verdict shows on the scenario line in the pull request. workspace, when not empty, is
// $GITHUB_WORKSPACE: absolute scenario paths under it are made relative, as GitHub expects.
func Annotations(w io.Writer, runs []*report.Run, scenarios []*report.Scenario, workspace string) error {
	var b strings.Builder
	for _, r := range runs {
		where := r.Scenario + " / " + r.Variant
		for _, c := range r.Checks {
			annotateCheck(&b, workspace, "kalab: "+where, c)
		}
		switch r.Status {
		case report.StatusError, report.StatusInterrupted:
			annotate(&b, "error", workspace, r.File, 0, 0, "kalab: "+where, r.Status+": "+r.Error)
		case report.StatusNotRun:
			annotate(&b, "warning", workspace, r.File, 0, 0, "kalab: "+where, "not run: "+r.Reason)
		}
	}
	for _, s := range scenarios {
		for _, c := range s.Checks {
			annotateCheck(&b, workspace, "kalab: "+s.Scenario+" (compare)", c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AnnotateMissing writes a ::error (fail true) or ::warning for baseline runs that did not run.
func AnnotateMissing(w io.Writer, missing []gate.RunDiff, fail bool, workspace string) error {
	var b strings.Builder
	for _, m := range missing {
		cmd := "warning"
		if fail {
			cmd = "error"
		}
		fmt.Fprintf(&b, "::%s file=%s,title=%s::%s\n", cmd, escapeProperty(relTo(workspace, m.File)),
			escapeProperty("kalab: "+m.Scenario+" / "+m.Variant),
			escapeData(m.MissingText()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AnnotateProblem writes a ::error workflow command for one problem found in an input file
// (a scenario that does not load), so it shows on its line in the pull request.
func AnnotateProblem(w io.Writer, workspace, file string, line, col int, msg string) error {
	var b strings.Builder
	annotate(&b, "error", workspace, file, line, col, "kalab: invalid scenario", msg)
	_, err := io.WriteString(w, b.String())
	return err
}

// annotateCheck annotates a check that did not pass: an error when it failed, a warning
// when it was not evaluated.
func annotateCheck(b *strings.Builder, workspace, title string, c report.Check) {
	switch c.Verdict() {
	case report.VerdictFail:
		annotate(b, "error", workspace, c.File, c.Line, c.Col, title, checkText(c))
	case report.VerdictNotEvaluated:
		annotate(b, "warning", workspace, c.File, c.Line, c.Col, title, "NOT EVALUATED "+c.Expr+": "+c.NotEvaluated)
	}
}

func annotate(b *strings.Builder, cmd, workspace, file string, line, col int, title, msg string) {
	fmt.Fprintf(b, "::%s file=%s", cmd, escapeProperty(relTo(workspace, file)))
	if line > 0 {
		fmt.Fprintf(b, ",line=%d", line)
		if col > 0 {
			fmt.Fprintf(b, ",col=%d", col)
		}
	}
	fmt.Fprintf(b, ",title=%s::%s\n", escapeProperty(title), escapeData(msg))
}

// checkText is a failed check as one message: the expression, its observed values, its error.
func checkText(c report.Check) string {
	s := "FAIL " + c.Expr
	if len(c.Observed) > 0 {
		s += " (" + report.Observed(c.Observed) + ")"
	}
	if c.Error != "" {
		s += ": " + c.Error
	}
	return s
}

// relTo is file as GitHub wants it in an annotation: relative to the workspace when it lies
// under it (a relative path is taken from where kalab ran), else as it is.
func relTo(workspace, file string) string {
	if workspace == "" {
		return filepath.ToSlash(file)
	}
	// A relative path is relative to where kalab ran, which may be below the workspace.
	abs := file
	if !filepath.IsAbs(abs) {
		if a, err := filepath.Abs(file); err == nil {
			abs = a
		}
	}
	if r, err := filepath.Rel(workspace, abs); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(file)
}

// escapeData and escapeProperty follow the runner's workflow-command encoding: a newline in
// a message would otherwise end the command, and a comma or colon in a property would end
// the property.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
