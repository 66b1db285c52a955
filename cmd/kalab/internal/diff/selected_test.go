package diff

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
)

// TestSelectedLimitsMissing: running one file of a suite leaves the other files' baseline
// runs out of "missing"; running the directory keeps a file deleted from it in.
func TestSelectedLimitsMissing(t *testing.T) {
	t.Parallel()
	run := func(sc, file string) *report.Run { r := baseRun(sc, "v"); r.File = file; return r }
	b := loadBase(t, run("one", "suite/01.yaml"), run("two", "suite/02.yaml"), run("gone", "suite/03.yaml"), run("else", "other/x.yaml"))
	ran := []*report.Run{run("one", "suite/01.yaml")}
	names := func(ds []gate.RunDiff) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Scenario)
		}
		return out
	}
	if got := names(b.Missing(ran, Selected([]string{"one"}, []string{"suite/01.yaml"}))); len(got) != 0 {
		t.Errorf("one file selected: missing %v, want none", got)
	}
	got := names(b.Missing(ran, Selected([]string{"one", "two"}, []string{"suite"})))
	if strings.Join(got, ",") != "two,gone" {
		t.Errorf("directory selected: missing %v, want [two gone] (other/ was not selected)", got)
	}
	// A renamed file: the scenario is loaded from elsewhere, so its baseline run counts.
	if got := names(b.Missing(ran, Selected([]string{"one", "else"}, []string{"suite/01.yaml", "moved.yaml"}))); strings.Join(got, ",") != "else" {
		t.Errorf("renamed file: missing %v, want [else]", got)
	}
}
