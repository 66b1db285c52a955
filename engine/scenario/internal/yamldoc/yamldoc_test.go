package yamldoc

import (
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Read stops at the first thing that makes a file no scenario, at its line and column.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct {
		name, data string
		line, col  int
		msg        string
	}{
		{"bad utf-8", "name: a\nx: \xff\n", 2, 4, "not valid UTF-8"},
		{"control", "name: a\nx: \x01\n", 2, 4, "control characters"},
		{"empty", "", 1, 1, "the file is empty"},
		{"null", "~\n", 1, 1, "no content"},
		{"two documents", "name: a\n---\nname: b\n", 2, 1, "one YAML document"}, // at its ---
		{"a list", "- a\n- b\n", 1, 1, "found a list"},
		{"syntax", "name: [a\n", 1, 0, "expected ',' or ']'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, ds := Read("f.yaml", []byte(c.data))
			if root != nil || len(ds) != 1 {
				t.Fatalf("root %v, diagnostics %v", root, ds)
			}
			d := ds[0]
			if d.File != "f.yaml" || d.Line != c.line || (c.col > 0 && d.Col != c.col) || !strings.Contains(d.Message, c.msg) {
				t.Errorf("%s:%d:%d %s; want line %d col %d, %q", d.File, d.Line, d.Col, d.Message, c.line, c.col, c.msg)
			}
		})
	}
	root, ds := Read("f.yaml", []byte("name: a\nclient: {preset: x}\n"))
	if ds != nil || root == nil || root.Kind != yaml.MappingNode {
		t.Fatalf("a good file: %v, %v", root, ds)
	}
}

func mustRead(t *testing.T, data string) *yaml.Node {
	t.Helper()
	root, ds := Read("f.yaml", []byte(data))
	if ds != nil {
		t.Fatal(ds)
	}
	return root
}

// ToJSON reports what neither yaml.v3 nor the schema would, and converts the rest.
func TestToJSON(t *testing.T) {
	c, ok := ToJSON("f.yaml", mustRead(t, "name: a\nload: {requests: 3, pause: 1s}\nlist: [1, x]\n"))
	b, _ := json.Marshal(c.Value)
	if !ok || len(c.Diags) != 0 || string(b) != `{"list":[1,"x"],"load":{"pause":"1s","requests":3},"name":"a"}` {
		t.Fatalf("ok %v, %s, %v", ok, b, c.Diags)
	}
	for _, d := range []struct{ data, msg string }{
		{"name: a\nname: b\n", "name"},
		{"base: &b {x: 1}\nm:\n  <<: *b\n", "merge"},
		{"name: a\nx: .nan\n", ""},
	} {
		c, _ := ToJSON("f.yaml", mustRead(t, d.data))
		if len(c.Diags) == 0 || !strings.Contains(c.Diags.Error(), d.msg) {
			t.Errorf("%q: diagnostics %v, want one naming %q", d.data, c.Diags, d.msg)
		}
	}
	// A billion laughs is stopped by the node budget, not by memory.
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i := range 8 {
		name := string(rune('b' + i))
		laughs += name + ": &" + name + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = name
	}
	if c, ok := ToJSON("f.yaml", mustRead(t, laughs)); ok || len(c.Diags) == 0 {
		t.Errorf("alias expansion of 10^9 nodes: ok %v, %v", ok, c.Diags)
	}
}

func TestNodes(t *testing.T) {
	root := mustRead(t, "client: {preset: node-agent, retry: {attempts: 1}}\nvariants:\n  - {name: a}\n  - {name: b}\n")
	if n, path := NodeAt(root, "/variants/1/name"); n == nil || n.Value != "b" || path != "variants[1].name" || n.Line != 4 {
		t.Errorf("NodeAt: %v at %q", n, path)
	}
	if n, path := NodeAt(root, "/client/nope"); n == nil || n.Kind != yaml.MappingNode || path != "client" {
		t.Errorf("NodeAt a missing key: the nearest node, %v at %q", n, path)
	}
	over := mustRead(t, "client: {retry: {attempts: 3}, idle_timeout: 2s}\n")
	m := Merged(root, over)
	_, client := Lookup(m, "client")
	_, preset := Lookup(client, "preset")
	_, retry := Lookup(client, "retry")
	_, attempts := Lookup(retry, "attempts")
	_, idle := Lookup(client, "idle_timeout")
	if preset == nil || preset.Value != "node-agent" || attempts == nil || attempts.Value != "3" || attempts.Line != 1 || idle == nil {
		t.Errorf("Merged: preset %v, attempts %v, idle %v", preset, attempts, idle)
	}
	if _, a := Lookup(retry, "attempts"); a.Value != "3" {
		t.Error("Merged changed its base")
	}
	if _, orig := Lookup(Resolve(root), "client"); orig != nil {
		if _, r := Lookup(orig, "retry"); r != nil {
			if _, a := Lookup(r, "attempts"); a.Value != "1" {
				t.Errorf("Merged wrote into its base: attempts %s", a.Value)
			}
		}
	}
	set := SetPath(root, []string{"server", "idle_timeout"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "5s", Line: 9, Column: 3})
	if n, _ := NodeAt(set, "/server/idle_timeout"); n == nil || n.Value != "5s" || n.Line != 9 {
		t.Errorf("SetPath: %v", n)
	}
	if JoinPath("", "a") != "a" || JoinPath("a", "b") != "a.b" {
		t.Error("JoinPath")
	}
}
