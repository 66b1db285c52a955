package promtext

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// TestDashboardNames: every kalab_ name the example Grafana dashboard queries is a family
// the exposition writes, and every label it selects on is one its samples carry, so the
// dashboard does not go blank when a name changes.
func TestDashboardNames(t *testing.T) {
	raw, err := os.ReadFile("../../../../examples/grafana/kalab-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("examples/grafana/kalab-dashboard.json: %v", err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	if len(exprs) < 10 {
		t.Fatalf("found %d queries in the dashboard; the walk is wrong", len(exprs))
	}
	rs, scs := runs()
	var b bytes.Buffer
	if err := Write(&b, rs, scs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	name := regexp.MustCompile(`\bkalab_[a-z0-9_]+`)
	sel := regexp.MustCompile(`([a-z_]+)=~?"`)
	for _, e := range exprs {
		for _, n := range name.FindAllString(e, -1) {
			if !regexp.MustCompile(`(?m)^# TYPE ` + n + ` gauge$`).MatchString(out) {
				t.Errorf("the dashboard queries %s (in %q), which the exposition does not write", n, e)
			}
		}
		for _, m := range sel.FindAllStringSubmatch(e, -1) {
			if !bytes.Contains(b.Bytes(), []byte(m[1]+`="`)) {
				t.Errorf("the dashboard selects on label %s (in %q), which no sample carries", m[1], e)
			}
		}
	}
}
