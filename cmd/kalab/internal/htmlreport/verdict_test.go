package htmlreport

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// A model run that passes beside a real client that is not installed, with a compare over
// both: the compare cannot be evaluated.
const notRunPlan = `
name: not-run
load: {requests: 2}
variants:
  - {name: model, expect: ["errors == 0"]}
  - {name: real, client: {exec: {command: [kalab-no-such-client]}}, expect: ["requests == 2"]}
compare: ["variant('real').errors == variant('model').errors"]
`

// notRunPage runs notRunPlan through the runner and renders its report.
func notRunPage(t *testing.T) (page, html string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "not-run.yaml")
	if err := os.WriteFile(file, []byte(notRunPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: filepath.Join(dir, "results"),
		KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, LagTolerance: -1})
	if err != nil {
		t.Fatal(err)
	}
	if st := out.Scenarios[0].Status; st != report.StatusNotEvaluated {
		t.Fatalf("scenario status %s; want %s", st, report.StatusNotEvaluated)
	}
	res, err := Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	page = filepath.Join(dir, "report.html")
	if err := WriteFile(page, res, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return page, string(b)
}

// checkUnevaluated requires, in a page's markup or its DOM, the compare and the real run's
// check drawn as not evaluated with the reason, never as a pass, and the counts apart.
func checkUnevaluated(t *testing.T, dom string) {
	t.Helper()
	var passed, unevaluated []string
	for _, e := range elements(dom) {
		if e.name != "li" {
			continue
		}
		switch e.attrs["class"] {
		case report.VerdictPass:
			passed = append(passed, e.attrs["data-verdict"])
		case report.VerdictNotEvaluated:
			unevaluated = append(unevaluated, e.attrs["data-verdict"])
		}
	}
	// One pass: the model's errors == 0. Not evaluated: the real run's expect and the compare.
	if len(passed) != 1 || len(unevaluated) != 2 {
		t.Errorf("%d checks drawn as passed, %d as not evaluated; want 1 and 2", len(passed), len(unevaluated))
	}
	for _, want := range []string{
		`compare <span class="obs">0/0, 1 not evaluated</span>`,
		`not evaluated: variant real did not run: client runtime not available: command kalab-no-such-client`,
		`not run: client runtime not available`,
		`<td>0/0, 1 not evaluated</td>`,
		`<span class="badge not-run">not-run</span>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if regexp.MustCompile(`<h3>compare[^<]*<span class="obs">[1-9]\d*/[1-9]`).MatchString(dom) {
		t.Error("the compare heading counts a pass")
	}
}

// The report of a run whose real client is missing: its compare is drawn not evaluated.
func TestUnevaluatedCompareIsNotDrawnAsPassed(t *testing.T) {
	t.Parallel()
	_, page := notRunPage(t)
	checkUnevaluated(t, page)
	if !strings.Contains(page, `ul.checks li.not-evaluated::marker{content:"? "`) {
		t.Error("no marker of its own for a check not evaluated (it would take the list's default)")
	}
}

// The same page as Chromium builds it: the DOM after the page's script has run.
func TestBrowserDrawsUnevaluatedCompare(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	page, _ := notRunPage(t)
	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish (no data-ready on <body>); DOM starts %.300q", dom)
	}
	checkUnevaluated(t, dom)
}
