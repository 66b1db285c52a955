package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// virtualOpts are the options of a test that runs on the virtual clock.
func virtualOpts(t *testing.T) Options {
	o := opts(t)
	o.Host = TestHost(t)
	return o
}

// bundled loads files of the bundled suite.
func bundled(t *testing.T, names ...string) *scenario.Plan {
	t.Helper()
	var files []string
	for _, n := range names {
		files = append(files, filepath.Join("..", "..", "scenarios", n))
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exactPredictions fails for every count the oracle predicts that the run did not measure
// exactly: on the virtual clock no timer is late, so there is no band to allow.
func exactPredictions(t *testing.T, r *report.Run) {
	t.Helper()
	if r.Predicted == nil {
		return
	}
	for _, c := range r.Predicted.Counts {
		if !c.Predicted {
			continue
		}
		if c.AtMost && c.Measured <= float64(c.Value) {
			continue
		}
		if c.Measured != float64(c.Value) {
			t.Errorf("%s/%s: %s measured %v, the plan predicts %d (%s)", r.Scenario, r.Variant, c.Metric, c.Measured, c.Value, c.Reason)
		}
	}
}

// TestStaleRaceVirtualExact runs file 04 on the virtual clock: node-agent's 15 errors are
// the plan's 15 races, every predicted count is exact, and a second run gives the same
// record in every field but the wall-clock ones.
func TestStaleRaceVirtualExact(t *testing.T) {
	run := func() *Outcome {
		out, err := Execute(context.Background(), bundled(t, "04-stale-race.yaml"), virtualOpts(t))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	start := time.Now()
	first := run()
	wall := time.Since(start)
	second := run()
	byVariant := map[string]*report.Run{}
	for _, r := range first.Runs {
		byVariant[r.Variant] = r
		if r.Clock != scenario.ClockVirtual {
			t.Errorf("%s ran on the %q clock, want virtual", r.Variant, r.Clock)
		}
		if r.Status != report.StatusPass {
			t.Errorf("%s: status %s (%s)", r.Variant, r.Status, r.Error)
		}
		exactPredictions(t, r)
	}
	if r := byVariant["node-agent"]; r == nil || r.Metrics.Errors != 15 {
		t.Fatalf("node-agent: %+v errors, want exactly 15", r)
	}
	for i, r := range second.Runs {
		a, b := comparable(t, first.Runs[i]), comparable(t, r)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the second run's record differs from the first:\n%s\n%s", r.Variant, a, b)
		}
		ra, rb := requestsOf(t, first.Dir, first.Runs[i]), requestsOf(t, second.Dir, r)
		if ra != rb {
			t.Errorf("%s: the second run's requests differ from the first", r.Variant)
		}
	}
	t.Logf("file 04 on the virtual clock: %d runs in %v of wall time", len(first.Runs), wall)
}

// comparable is a run record without the fields that are the machine's, not the model's:
// wall-clock stamps, ids, and the process's CPU, memory and scheduling figures.
func comparable(t *testing.T, r *report.Run) string {
	t.Helper()
	c := *r
	c.RunID, c.StartedAt, c.WallMs, c.Timing = "", time.Time{}, 0, nil
	m := c.Metrics
	m.CPUUsPerRequest, m.PeakRSSMB = 0, 0
	c.Metrics = m
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requestsOf is the run's requests file.
func requestsOf(t *testing.T, dir string, r *report.Run) string {
	t.Helper()
	if r.RequestsFile == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, r.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
