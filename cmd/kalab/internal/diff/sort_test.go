package diff

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// TestSortRunsGroupsByScenarioInFileOrder: a results file lists runs as they ended; the
// diff table groups them by scenario file and follows each scenario file's run order.
func TestSortRunsGroupsByScenarioInFileOrder(t *testing.T) {
	run := func(file, sc, v string) *report.Run { return &report.Run{File: file, Scenario: sc, Variant: v} }
	runs := []*report.Run{
		run("b.yaml", "two", "y"), run("a.yaml", "one", "v2"), run("b.yaml", "two", "x"),
		run("a.yaml", "one", "v1"), run("a.yaml", "one", "v3"),
	}
	// a.yaml loaded: its order is v1, v2, v3; b.yaml did not load, so its runs keep their
	// order in the results file.
	sortRuns(runs, map[string]int{"one\x00v1": 0, "one\x00v2": 1, "one\x00v3": 2})
	var got []string
	for _, r := range runs {
		got = append(got, r.Scenario+"/"+r.Variant)
	}
	if want := "one/v1 one/v2 one/v3 two/y two/x"; strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}
