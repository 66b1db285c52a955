package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// --reuse-real takes a real program's run from an earlier results file, where it holds a
// passed run of the same file, variant, seed and settings: the program does not start
// again (the record is the earlier one, named in its notes), the modelled run runs, and
// the compare reads both. A run whose settings changed (another seed) runs.
func TestReuseRealTakesOnlyMatchingRealRuns(t *testing.T) {
	t.Parallel()
	src := `
name: reuse-real
network: {rtt: 20ms}
server: {idle_timeout: 5s}
load: {requests: 3, burst: 1, pause: 100ms}
variants:
  - {name: model, client: {preset: curl-loop}}
  - {name: real, client: {exec: curl-loop}}
  - {name: real-other, client: {exec: curl-loop}, load: {seed: 9}}
compare:
  - "variant('real').connections == variant('model').connections"
`
	p := plan(t, src)
	first, err := Execute(context.Background(), p, opts(t))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*report.Run{}
	for _, r := range first.Runs {
		if r.Variant != "model" {
			needRuntime(t, r)
		}
		if r.Status != report.StatusPass {
			t.Fatalf("first invocation, %s: %s %s", r.Variant, r.Status, r.Error)
		}
		byName[r.Variant] = r
	}
	// The earlier file, with real-other's seed changed: its settings no longer match.
	lines := []*report.Run{byName["model"], byName["real"], byName["real-other"]}
	other := *byName["real-other"]
	other.Seed++
	lines[2] = &other
	u := &Reuse{From: "earlier", runs: map[reuseKey]*report.Run{}}
	for _, r := range lines {
		u.runs[reuseKey{r.File, r.Variant, string(r.Params), r.Seed}] = r
	}
	o := opts(t)
	o.Reuse = u
	second, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range second.Runs {
		taken := strings.Contains(strings.Join(r.Notes, " "), "taken from earlier")
		// The model run is on the real clock here (a test has no virtual clock's host):
		// kalab's own client, not a program, so it runs again too.
		if want := r.Variant == "real"; taken != want {
			t.Errorf("%s: taken from the earlier file %v, want %v (notes %q)", r.Variant, taken, want, r.Notes)
		}
		if r.Variant == "real" && (!r.StartedAt.Equal(byName["real"].StartedAt) || r.RunID != second.Runs[0].RunID || r.RequestsFile != "") {
			t.Errorf("real: started %v run %s requests %q; want the earlier start %v, this invocation's run id, no requests file",
				r.StartedAt, r.RunID, r.RequestsFile, byName["real"].StartedAt)
		}
		if r.Variant == "real-other" && r.StartedAt.Equal(byName["real-other"].StartedAt) {
			t.Error("real-other ran with other settings than the earlier record, yet was not run again")
		}
	}
	if len(second.Scenarios) != 1 || second.Scenarios[0].Status != report.StatusPass {
		t.Errorf("the compare over a reused run: %+v", second.Scenarios)
	}
	if err := report.ValidateRunDir(filepath.Join(second.Dir)); err != nil {
		t.Errorf("results with a reused run do not match result.schema.json: %v", err)
	}
}
