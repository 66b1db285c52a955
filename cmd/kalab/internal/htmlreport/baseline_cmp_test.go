package htmlreport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// runPlan runs a scenario file's text through the runner and returns its results directory.
func runPlan(t *testing.T, dir, text string) string {
	t.Helper()
	file := filepath.Join(dir, "cmp.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
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
	return out.Dir
}

// The same scenario run twice, the second time without keep-alive: against the first as
// its baseline, the second reused none of its 4 requests where the baseline reused 3
// (reuse_ratio 0.75 -> 0, beyond the default rule's tolerance). The page counts the run as
// regressed, lists it at the top, marks the metric in the run, and shows the baseline's
// run beside it.
func TestBrowserBaselineComparison(t *testing.T) {
	t.Parallel()
	const plan = "name: cmp\nload: {requests: 4}\nclient: {keepalive: %s}\n"
	base := runPlan(t, t.TempDir(), strings.Replace(plan, "%s", "true", 1))
	cur := runPlan(t, t.TempDir(), strings.Replace(plan, "%s", "false", 1))
	b, err := baseline.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Load(cur)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(cur, "report.html")
	if err := WriteFile(page, res, Options{Baseline: b}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Regressed string
		Failures  []string
		Rows      []string
		BaseRow   bool
	}
	probe(t, page, "", `
return {regressed:document.querySelector('[data-total="regressed"]').textContent,
  failures:[].map.call(document.querySelectorAll(".failures li"),function(li){return li.getAttribute("data-kind")+" "+li.textContent;}),
  rows:[].map.call(document.querySelectorAll("table.diff tr[data-verdict]"),function(tr){return tr.getAttribute("data-verdict")+" "+tr.getAttribute("data-metric")+" "+tr.children[1].textContent+" "+tr.children[2].textContent;}),
  baseRow:!!document.querySelector("tr.base")};`, &got)
	if got.Regressed != "1" {
		t.Errorf("regressed total %q; want 1", got.Regressed)
	}
	// On a busy machine the second run's latency regresses too (p50 0.06 -> 4.27 ms at
	// load 4, listed before reuse_ratio in the same entry): true, and not what this checks.
	if len(got.Failures) != 1 || !strings.HasPrefix(got.Failures[0], "regressed") ||
		!strings.Contains(got.Failures[0], "cmp / default ") || !strings.Contains(got.Failures[0], "reuse_ratio 0.75 → 0 (-100.0%)") {
		t.Errorf("failures panel %q; want the run, regressed: reuse_ratio 0.75 → 0", got.Failures)
	}
	rows := strings.Join(got.Rows, "|")
	for _, want := range []string{"regressed reuse_ratio 0.75 0"} {
		if !strings.Contains(rows, want) {
			t.Errorf("the run's comparison lacks %q: %q", want, got.Rows)
		}
	}
	if !got.BaseRow {
		t.Error("no baseline row beside the run")
	}
}
