package shard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kalab-dev/kalab/schema"
)

// TestManifestRoundTrip writes a manifest, checks it against schema/shard.schema.json and
// reads it back unchanged; a manifest of another version or an unknown field is refused.
func TestManifestRoundTrip(t *testing.T) {
	plan, w := synthetic(map[string][]int{"a.yaml": {10, 20}, "b.yaml": {30}})
	s := Plan(plan, 2, w)
	seed := int64(7)
	m := NewManifest(s, 2)
	m.KalabVersion, m.RunID, m.Files, m.Weights = "dev", "20260101T000000Z-abcdef", []string{"a.yaml", "b.yaml"}, "plan"
	m.Paths = []string{"."}
	m.TimeScale, m.Seed, m.Filter = 0.5, &seed, "a|b"
	m.PlanHash = PlanHash(plan, Overrides{TimeScale: 0.5, Seed: &seed})
	dir := t.TempDir()
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.Shard))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(schema.ShardURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schema.ShardURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("shard.json does not match schema/shard.schema.json: %v", err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("read back %+v, wrote %+v", got, m)
	}
	// The schema must be able to fail: a run without its shard.
	var bad map[string]any
	if err := json.Unmarshal(b, &bad); err != nil {
		t.Fatal(err)
	}
	delete(bad["runs"].([]any)[0].(map[string]any), "shard")
	if err := sch.Validate(bad); err == nil {
		t.Errorf("the schema accepted a run without its shard")
	}
	for name, edit := range map[string]func([]byte) []byte{
		"version": func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"record_version": 1`), []byte(`"record_version": 2`), 1)
		},
		"unknown field": func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"shard": 2,`), []byte(`"shard": 2, "shardz": 1,`), 1)
		},
		"out of range": func(b []byte) []byte { return bytes.Replace(b, []byte(`"shard": 2,`), []byte(`"shard": 3,`), 1) },
	} {
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), edit(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadManifest(dir); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPlanHash: any change of the plan or the overrides changes the hash; the file order
// does not.
func TestPlanHash(t *testing.T) {
	plan, _ := synthetic(map[string][]int{"a.yaml": {10, 20}, "b.yaml": {30}})
	h := PlanHash(plan, Overrides{})
	swapped := *plan
	swapped.Scenarios = append(swapped.Scenarios[1:2:2], swapped.Scenarios[0])
	if PlanHash(&swapped, Overrides{}) != h {
		t.Errorf("the hash depends on the order of the files")
	}
	if PlanHash(plan, Overrides{TimeScale: 0.5}) == h {
		t.Errorf("--time-scale does not change the hash")
	}
	seed := int64(1)
	if PlanHash(plan, Overrides{Seed: &seed}) == h {
		t.Errorf("--seed does not change the hash")
	}
	plan.Scenarios[0].Runs[0].Settings.Load.Requests = 99
	if PlanHash(plan, Overrides{}) == h {
		t.Errorf("a changed setting does not change the hash")
	}
}
