package runner

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestCompareJudgedOverItsOperandsLateness: a compare whose verdict the link's measured
// lateness could change is not evaluated, with the reason; the same observed values with
// less lateness, or a verdict far from its bound, are judged. Expected values by hand: the
// keep-alive run's p50 of 47 ms over three link trips at a p50 lateness of L ms may be as
// low as 47 - 3L in the scenario (time scale 1), so 150 / (47 - 3L) <= 3.3 holds for every
// L up to 0.5 (150/45.5 = 3.297) and not at L = 1 (150/44 = 3.41).
func TestCompareJudgedOverItsOperandsLateness(t *testing.T) {
	src := "variant('cold').latency_ms.p50 / variant('warm').latency_ms.p50 <= 3.3"
	ca, err := check.Compile(src, check.Compare)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario.Scenario{Name: "s", Compare: []scenario.Assertion{{Assertion: ca, File: "s.yaml", Line: 3, Col: 5}}}
	run := func(p50, lateP50 float64) *report.Run {
		r := &report.Run{Status: report.StatusPass, TimeScale: 1}
		r.Metrics.LatencyMs.P50 = p50
		r.Timing = &report.Timing{LinkTrips: 3, Sources: map[string]report.TimingSource{
			srcLink: {N: 100, P50: lateP50, P99: 10 * lateP50, Max: 20 * lateP50}}}
		return r
	}
	for _, tc := range []struct {
		name        string
		cold, warm  float64
		late        float64
		wantVerdict string
	}{
		{"quiet", 150, 47, 0.05, report.VerdictPass},
		{"late but inside the margin", 150, 47, 0.5, report.VerdictPass},
		{"late enough to flip it", 150, 47, 1, report.VerdictNotEvaluated},
		{"failed far from the bound", 200, 47, 1, report.VerdictFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := map[string]*report.Run{"cold": run(tc.cold, tc.late), "warm": run(tc.warm, tc.late)}
			rec := compare(sc, runs, Options{})
			c := rec.Checks[0]
			if got := c.Verdict(); got != tc.wantVerdict {
				t.Fatalf("verdict %s, want %s (observed %v, not evaluated: %q)", got, tc.wantVerdict, c.Observed, c.NotEvaluated)
			}
			if tc.wantVerdict == report.VerdictNotEvaluated {
				if !strings.Contains(c.NotEvaluated, "warm latency_ms.p50 up to 3.00 ms") || rec.Status != report.StatusNotEvaluated {
					t.Errorf("reason %q, scenario status %s", c.NotEvaluated, rec.Status)
				}
			}
			// A compare the machine's timing left without a verdict is what keeps the
			// invocation from exiting 0 (cmd/kalab runExitCode); no other is.
			out := &Outcome{Scenarios: []*report.Scenario{rec}}
			if n, want := len(out.Unjudged()), map[bool]int{true: 1, false: 0}[tc.wantVerdict == report.VerdictNotEvaluated]; n != want {
				t.Errorf("Unjudged lists %d checks, want %d", n, want)
			}
		})
	}
}
