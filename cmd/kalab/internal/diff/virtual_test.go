package diff

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// TestVirtualRegressionRegresses: kalab diff of a virtual run whose p50 went 40 -> 49.988
// ms (client RTT 20 -> 30 ms) counts it as regressed, which is exit 1, however long its
// threads waited for a core in real time (5.527 ms a request more than the baseline run's:
// enough to excuse the 1.988 ms it is over the +20% were it a real-clock run). kalab diff
// exited 0 on this with "no verdict (machine)".
func TestVirtualRegressionRegresses(t *testing.T) {
	t.Parallel()
	run := func(id string, p50, waitMs float64) *report.Run {
		r := baseRun("rtt", "default")
		r.RunID, r.Clock = id, "virtual"
		r.Metrics.LatencyMs.P50 = p50
		r.Timing = &report.Timing{Sources: map[string]report.TimingSource{}, Attempt: 1, CPUWaitMs: &waitMs}
		return r
	}
	old, cur := loadBase(t, run("base", 40, 20)), loadBase(t, run("now", 49.988, 1125.4))
	diffs, _ := Compare(old, cur, &baseline.Tolerances{}, false)
	if c := Count(diffs); c.Regressed != 1 || c.NotComparable != 0 {
		t.Errorf("counts %+v, want 1 regressed (kalab diff exit 1)", c)
	}
	var b bytes.Buffer
	if err := DiffTable(&b, diffs, false); err != nil {
		t.Fatal(err)
	}
	if !matches(`(?m)^rtt +default +latency_ms\.p50 +40 +49\.988 +\+25\.0% +\+20% +REGRESSED`, b.String()) || strings.Contains(b.String(), "machine") {
		t.Errorf("table:\n%s", b.String())
	}
}
