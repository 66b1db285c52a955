package schemacheck

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// validate runs a YAML text through the schema as the loader does.
func validate(t *testing.T, data string) yamldoc.Diagnostics {
	t.Helper()
	root, ds := yamldoc.Read("f.yaml", []byte(data))
	if ds != nil {
		t.Fatal(ds)
	}
	c, ok := yamldoc.ToJSON("f.yaml", root)
	if !ok {
		t.Fatal(c.Diags)
	}
	return Validate("f.yaml", root, c.Value)
}

func TestValidate(t *testing.T) {
	if ds := validate(t, "name: ok\nnetwork: {rtt: 50ms}\nclient: {preset: node-agent}\nload: {requests: 3}\n"); ds != nil {
		t.Fatalf("a valid file: %v", ds)
	}
	for _, c := range []struct {
		name, data string
		line, col  int
		path, msg  string
	}{
		// An unknown field is reported at its key, with the field's path.
		{"unknown field", "name: a\nnetwork:\n  rttt: 50ms\n", 3, 3, "network.rttt", "rttt"},
		// A wrong type at the value.
		{"wrong type", "name: a\nload: {requests: many}\n", 2, 18, "load.requests", ""},
		// In a list item.
		{"list item", "name: a\nvariants:\n  - {name: v, client: {keepalive: maybe}}\n", 3, 35, "variants[0].client.keepalive", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds := validate(t, c.data)
			if len(ds) != 1 {
				t.Fatalf("%d diagnostics, want 1: %v", len(ds), ds)
			}
			d := ds[0]
			if d.Line != c.line || d.Col != c.col || d.Path != c.path || !strings.Contains(d.Message, c.msg) {
				t.Errorf("got %s:%d:%d %s: %s; want %d:%d %s", d.File, d.Line, d.Col, d.Path, d.Message, c.line, c.col, c.path)
			}
		})
	}
}

func TestField(t *testing.T) {
	for _, c := range []struct {
		path   string
		exists bool
		group  bool
	}{
		{"network.rtt", true, false},
		{"client.retry.attempts", true, false},
		{"client.retry", true, true},
		{"network", true, true},
		{"network.rttt", false, false},
		{"nope", false, false},
	} {
		exists, first := Field(c.path)
		if exists != c.exists || (first != "") != c.group {
			t.Errorf("Field(%q) = %v, %q; want exists %v, a group %v", c.path, exists, first, c.exists, c.group)
		}
	}
}
