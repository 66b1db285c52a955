package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/validate"
)

// validate --format json: the problems as data, with the exit code of the text form.
func TestValidateJSON(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nclient: {idle_timout: 1s}\nload: {requests: 2}\nexpect: [\"erors == 0\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := Main([]string{"validate", "--format", "json", bad}, &out, &errb)
	if code != exitInvalid {
		t.Errorf("exit %d, want %d", code, exitInvalid)
	}
	var doc validate.Document
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("stdout is no JSON document: %v\n%s", err, out.String())
	}
	if doc.Valid || len(doc.Problems) != 2 {
		t.Fatalf("valid %v, %d problems; want false, 2: %+v", doc.Valid, len(doc.Problems), doc)
	}
	if p := doc.Problems[0]; p.Line != 2 || p.Col != 10 || p.Path != "client.idle_timout" {
		t.Errorf("first problem at %d:%d %s, want 2:10 client.idle_timout", p.Line, p.Col, p.Path)
	}

	out.Reset()
	if code := Main([]string{"validate", "--format", "json", "../../scenarios/04-stale-race.yaml"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	doc = validate.Document{}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Valid || doc.Runs != 5 || len(doc.Scenarios) != 1 || doc.Scenarios[0].Name != "stale-race" {
		t.Errorf("got %+v; want valid, 5 runs, scenario stale-race", doc)
	}
	if code := Main([]string{"validate", "--format", "yaml"}, &out, &errb); code != exitInvalid {
		t.Errorf("--format yaml: exit %d, want %d", code, exitInvalid)
	}
}

// diff --format json: the baseline against itself compares every run, every metric the same.
func TestDiffJSON(t *testing.T) {
	const baseline = "../../results/baseline.jsonl"
	var out, errb strings.Builder
	if code := Main([]string{"diff", "--format", "json", "--no-scenario-tolerances", baseline, baseline}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		Runs []struct {
			Scenario, Variant, State string
			Metrics                  []struct{ Metric, Verdict string }
		}
		Counts struct{ Compared, Regressed int }
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("stdout is no JSON document: %v\n%.500s", err, out.String())
	}
	b, _ := os.ReadFile(baseline)
	runs := strings.Count(string(b), `{"record":"run",`)
	if runs == 0 || len(doc.Runs) != runs || doc.Counts.Compared != runs || doc.Counts.Regressed != 0 {
		t.Fatalf("%d runs in the document, counts %+v; want %d compared, 0 regressed", len(doc.Runs), doc.Counts, runs)
	}
	for _, r := range doc.Runs {
		if len(r.Metrics) < 10 {
			t.Errorf("%s / %s: %d metrics, want every metric", r.Scenario, r.Variant, len(r.Metrics))
		}
		for _, m := range r.Metrics {
			if m.Verdict != "same" && m.Verdict != "off" && m.Verdict != "changed" {
				t.Errorf("%s / %s: %s verdict %q against itself", r.Scenario, r.Variant, m.Metric, m.Verdict)
			}
		}
	}
}
