package htmlreport

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// A run whose real program ran at a version its preset was not verified against is marked
// beside its status in the scenario's table, and its note stands under the compare checks.
func TestVersionNoteBesideTheVerdict(t *testing.T) {
	t.Parallel()
	note := report.UnverifiedVersionNote("undici", "6.99.0", "undici", "6.24.1 on 2026-12-01")
	run := func(variant string, notes ...string) *RunData {
		return &RunData{Run: report.Run{Record: "run", RunID: "r1", Scenario: "truth", File: "t.yaml", Variant: variant,
			Status: report.StatusPass, Checks: []report.Check{}, Notes: notes}}
	}
	res := &Results{
		Runs: []*RunData{run("model", "exec client: ran at time scale 1, not 0.5"), run("real", note)},
		Scenarios: []report.Scenario{{Scenario: "truth", File: "t.yaml", Status: report.StatusPass,
			Checks: []report.Check{{Kind: "compare", Expr: "variant('real').connections == variant('model').connections", Pass: true}}}},
	}
	var out bytes.Buffer
	if err := Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(out.String())
	if n := strings.Count(page, `data-version-note title="`+note+`">version not verified`); n != 1 {
		t.Errorf("%d marks beside a status, want 1 (the real run's)", n)
	}
	if !strings.Contains(page, `data-version-note>real: `+note+`</p>`) {
		t.Errorf("the compare checks do not show the note")
	}
}
