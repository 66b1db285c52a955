package presets

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/fault"
)

const root = "../../../"

// Every behaviour names a fault the engine has, and one that has a truth file is run
// against it in .ci/faults (`FAULT run FILE` or `FAULT model FILE`), whose harness (.ci/mutate) then proves the
// file fails with the fault and passes without; the file exists and has the runs the
// behaviour says it compares. A behaviour's fault or truth file that nothing runs would
// claim a guard that is not there.
func TestBehaviourGuards(t *testing.T) {
	table, err := os.ReadFile(root + ".ci/faults")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]bool{}
	for _, line := range strings.Split(string(table), "\n") {
		// A model guard is a run guard whose real runs come from the suite's records.
		if f := strings.Fields(line); len(f) == 3 && (f[1] == "run" || f[1] == "model") {
			runs[f[0]+" "+f[2]] = true
		}
	}
	variant := regexp.MustCompile(`\b(?:real|model)-[a-z0-9-]+`)
	for name, list := range behaviours {
		if Client[name] == nil {
			t.Errorf("behaviours of %s: no such client preset", name)
			continue
		}
		for _, b := range list {
			if b.Name == "" || b.Rule == "" {
				t.Errorf("%s: a behaviour without a name or rule: %+v", name, b)
			}
			if b.Fault != "" && !slices.Contains(fault.Names, b.Fault) {
				t.Errorf("%s / %s: fault %q is not one of engine/fault's", name, b.Name, b.Fault)
			}
			for _, file := range b.Truth {
				src, err := os.ReadFile(root + file)
				if err != nil {
					t.Errorf("%s / %s: %v", name, b.Name, err)
					continue
				}
				for _, v := range variant.FindAllString(b.Compare, -1) {
					if !strings.Contains(string(src), "name: "+v+",") && !strings.Contains(string(src), "name: "+v+"\n") {
						t.Errorf("%s / %s: %s has no run %s", name, b.Name, file, v)
					}
				}
				if b.Guarded() && !runs[b.Fault+" "+file] {
					t.Errorf("%s / %s: .ci/faults has no guard `%s run %s`", name, b.Name, b.Fault, file)
				}
			}
		}
	}
}

// The truth files' mutation score, the behaviours whose fault a truth file is shown to
// catch over the behaviours listed, may only go up: .ci/truth-score holds the floor as
// "GUARDED LISTED", and the score must be at least GUARDED/LISTED. CI prints the score.
func TestTruthMutationScore(t *testing.T) {
	b, err := os.ReadFile(root + ".ci/truth-score")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf(".ci/truth-score: %q, want GUARDED LISTED", b)
	}
	floorG, err1 := strconv.Atoi(f[0])
	floorL, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || floorL <= 0 {
		t.Fatalf(".ci/truth-score: %q, want two counts", b)
	}
	guarded, listed := TruthScore()
	t.Logf("truth mutation score: %d of %d behaviours caught by a truth file (%.2f); floor %d of %d (%.2f)",
		guarded, listed, float64(guarded)/float64(listed), floorG, floorL, float64(floorG)/float64(floorL))
	if guarded*floorL < floorG*listed {
		t.Errorf("the truth mutation score fell to %d of %d, under the floor %d of %d in .ci/truth-score: give the new behaviour a fault and a truth file that catches it",
			guarded, listed, floorG, floorL)
	}
}

// The score counts what Guarded says: a behaviour without a fault or a truth file is not
// caught by one.
func TestTruthScoreCounts(t *testing.T) {
	for _, c := range []struct {
		b    Behaviour
		want bool
	}{
		{Behaviour{Truth: []string{"scenarios/truth/x.yaml"}, Fault: "f"}, true},
		{Behaviour{Truth: []string{"scenarios/truth/x.yaml"}}, false},
		{Behaviour{Fault: "f"}, false},
	} {
		if got := c.b.Guarded(); got != c.want {
			t.Errorf("%+v: guarded %v, want %v", c.b, got, c.want)
		}
	}
}
