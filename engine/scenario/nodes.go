package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	maxDepth = 64      // deeper than any scenario needs; stops "nesting thousands deep"
	maxNodes = 100_000 // budget for alias expansion; stops "billion laughs"
)

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// lookup returns the key and value nodes of key in a mapping, or nils.
func lookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// checker walks a document once for what neither yaml.v3 nor the schema reports:
// duplicate keys, merge keys, non-string keys, excessive depth or alias expansion.
type checker struct {
	file      string
	diags     Diagnostics
	nodes     int
	nonFinite [][2]int // line, col of .nan and .inf values, already reported
}

// nonFinite reports whether a scalar is YAML's .nan, .inf or -.inf (in any spelling).
func nonFinite(n *yaml.Node) bool {
	if n.ShortTag() != "!!float" {
		return false
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		return false
	}
	return math.IsNaN(f) || math.IsInf(f, 0)
}

func (c *checker) add(n *yaml.Node, path, format string, args ...any) {
	c.diags = append(c.diags, Diagnostic{File: c.file, Line: n.Line, Col: n.Column, Path: path, Message: fmt.Sprintf(format, args...)})
}

// toJSON converts a node to the value a JSON Schema validator expects, enforcing the limits.
// It returns ok=false when the document cannot be validated at all.
func (c *checker) toJSON(n *yaml.Node, path string, depth int) (any, bool) {
	c.nodes++
	if c.nodes > maxNodes {
		c.add(n, path, "the document expands to more than %d nodes (too many aliases?)", maxNodes)
		return nil, false
	}
	if depth > maxDepth {
		c.add(n, path, "nesting deeper than %d levels", maxDepth)
		return nil, false
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			c.add(n, path, "unknown alias")
			return nil, false
		}
		return c.toJSON(n.Alias, path, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, true
		}
		return c.toJSON(n.Content[0], path, depth+1)
	case yaml.MappingNode:
		obj := make(map[string]any, len(n.Content)/2)
		seen := make(map[string]*yaml.Node, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := resolve(n.Content[i]), n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				c.add(k, path, "a key must be a plain name, not a %s", kindName(k))
				return nil, false
			}
			if k.Tag == "!!merge" {
				c.add(k, path, "merge keys (<<) are not supported: write the fields out, or use a variant")
				return nil, false
			}
			if first, dup := seen[k.Value]; dup {
				c.add(k, joinPath(path, k.Value), "duplicate key (first set at line %d)", first.Line)
				continue
			}
			seen[k.Value] = k
			val, ok := c.toJSON(v, joinPath(path, k.Value), depth+1)
			if !ok {
				return nil, false
			}
			obj[k.Value] = val
		}
		return obj, true
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			val, ok := c.toJSON(item, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if !ok {
				return nil, false
			}
			arr = append(arr, val)
		}
		return arr, true
	case yaml.ScalarNode:
		if nonFinite(n) {
			// JSON has no NaN or infinity, and no field of a scenario means one: a rate
			// of .inf or a time scale of .nan would reach the engine as nonsense.
			c.add(n, path, "%s is not a finite number (write a number such as 0.5; quote it if you meant the text)", n.Value)
			c.nonFinite = append(c.nonFinite, [2]int{n.Line, n.Column})
			return n.Value, true
		}
		return scalarJSON(n), true
	}
	c.add(n, path, "unexpected YAML node")
	return nil, false
}

// scalarJSON types a scalar as YAML 1.2's core schema does (yaml.v3 resolves the tag).
func scalarJSON(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			return n.Value
		}
		return b
	case "!!int", "!!float":
		var x any
		if err := n.Decode(&x); err == nil {
			switch v := x.(type) {
			case int:
				return json.Number(strconv.Itoa(v))
			case int64:
				return json.Number(strconv.FormatInt(v, 10))
			case uint64:
				return json.Number(strconv.FormatUint(v, 10))
			case float64:
				return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		// An integer too large for 64 bits: keep its digits, so the schema reports
		// "must be <= max" with the value the user wrote.
		if s := strings.ReplaceAll(n.Value, "_", ""); isDecimal(s) {
			return json.Number(s)
		}
		return n.Value
	}
	return n.Value
}

func isDecimal(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// merged returns a deep copy of base with overlay's mapping fields laid over it: mappings merge
// key by key, anything else replaces. Positions are kept, so errors point at the line that set
// the value.
func merged(base, overlay *yaml.Node) *yaml.Node {
	base, overlay = resolve(base), resolve(overlay)
	if overlay == nil {
		return base
	}
	if base == nil || base.Kind != yaml.MappingNode || overlay.Kind != yaml.MappingNode {
		return overlay
	}
	out := *base
	out.Content = append([]*yaml.Node(nil), base.Content...)
	for i := 0; i+1 < len(overlay.Content); i += 2 {
		k, v := overlay.Content[i], overlay.Content[i+1]
		replaced := false
		for j := 0; j+1 < len(out.Content); j += 2 {
			if out.Content[j].Value == k.Value {
				out.Content[j+1] = merged(out.Content[j+1], v)
				replaced = true
				break
			}
		}
		if !replaced {
			out.Content = append(out.Content, k, v)
		}
	}
	return &out
}

// setPath returns a copy of root with the value at a dotted path replaced by val, creating
// mappings on the way.
func setPath(root *yaml.Node, path []string, val *yaml.Node) *yaml.Node {
	overlay := val
	for i := len(path) - 1; i >= 0; i-- {
		overlay = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: val.Line, Column: val.Column,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[i], Line: val.Line, Column: val.Column}, overlay}}
	}
	return merged(root, overlay)
}

// nodeAt finds the node at a JSON pointer (as jsonschema reports instance locations).
func nodeAt(root *yaml.Node, pointer string) (*yaml.Node, string) {
	n := resolve(root)
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = resolve(n.Content[0])
	}
	path := ""
	if pointer == "" || pointer == "/" {
		return n, path
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch {
		case n == nil:
			return nil, path
		case n.Kind == yaml.MappingNode:
			_, v := lookup(n, tok)
			if v == nil {
				return n, path
			}
			n, path = resolve(v), joinPath(path, tok)
		case n.Kind == yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n, path
			}
			n, path = resolve(n.Content[i]), fmt.Sprintf("%s[%d]", path, i)
		default:
			return n, path
		}
	}
	return n, path
}

// describe renders a scalar as the user wrote it, for messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	if n == nil {
		return "nothing"
	}
	if n.Kind != yaml.ScalarNode {
		return "a " + kindName(n)
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	if len(n.Value) > 40 {
		return n.Value[:40] + "..."
	}
	return n.Value
}
