package judge

import (
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// TestBundledSuiteJudgeable: no check of the bundled suite is below what its timers reach
// on a quiet machine.
func TestBundledSuiteJudgeable(t *testing.T) {
	files, err := scenario.FindFiles([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Unjudgeable(p, 0, 0) {
		t.Error(d.String())
	}
}

func TestRoundUp(t *testing.T) {
	for v, want := range map[float64]string{12.5: "13", 0.351: "0.36", 0.35: "0.35", 130: "130", 1: "1", 0.2: "0.2", 99.01: "100"} {
		if got := roundUp(v); got != want {
			t.Errorf("roundUp(%g) = %s, want %s", v, got, want)
		}
	}
}
