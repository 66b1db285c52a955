package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// results.jsonl opens and closes with an invocation record; the closing one counts what was
// planned and recorded, and the plan hash names the plan whatever the filter.
func TestInvocationRecords(t *testing.T) {
	t.Parallel()
	src := "name: inv\nload: {requests: 2}\nvariants: [{name: a}, {name: b}, {name: c}]\n"
	o := opts(t)
	o.Filter = regexp.MustCompile(`/(a|b)$`)
	out, err := Execute(context.Background(), plan(t, src), o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out.Dir, report.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.Contains(lines[0], `"record":"invocation"`) || !strings.Contains(lines[0], `"state":"started"`) {
		t.Fatalf("first line is not the opening invocation record: %s", lines[0])
	}
	res, err := report.ReadFile(filepath.Join(o.Out, "latest", report.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	inv := res.Invocation
	if inv == nil || inv.State != report.InvocationEnded || !inv.Completed || inv.Planned != 2 || inv.Recorded != 2 ||
		inv.Interrupted != 0 || inv.Filter != `/(a|b)$` || inv.EndedAt == nil {
		t.Fatalf("closing record %+v", inv)
	}
	if a, b := mustJSON(t, out.Invocation), mustJSON(t, inv); a != b {
		t.Fatalf("Outcome.Invocation %+v differs from the file's %+v", out.Invocation, inv)
	}
	// The hash is the whole plan's: equal under another filter, different with another seed.
	p := plan(t, src)
	if h := PlanHash(p, Options{}); h != inv.PlanHash {
		t.Fatalf("PlanHash without the filter %s; the record says %s", h, inv.PlanHash)
	}
	seed := int64(99)
	if PlanHash(p, Options{Seed: &seed}) == inv.PlanHash {
		t.Fatal("--seed does not change the plan hash")
	}
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
}

// An interrupted invocation is recorded as not completed.
func TestInvocationInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := opts(t)
	out, err := Execute(ctx, plan(t, "name: cut\nload: {requests: 2}\n"), o)
	if err != nil {
		t.Fatal(err)
	}
	inv := out.Invocation
	if !out.Interrupted || inv.Completed || inv.Reason != "interrupted" || inv.Planned != 1 {
		t.Fatalf("interrupted invocation recorded as %+v", inv)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
