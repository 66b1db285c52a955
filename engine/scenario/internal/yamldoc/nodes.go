// Package yamldoc reads one scenario file's YAML into positioned nodes and says what is
// wrong with it at file:line:col: the document's syntax and limits, its conversion to the
// value a JSON Schema validator reads, and the node helpers (lookup, merge, path) that
// keep every value's position so later checks can point at it.
package yamldoc

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	maxDepth = 64      // deeper than any scenario needs; stops "nesting thousands deep"
	maxNodes = 100_000 // budget for alias expansion; stops "billion laughs"
)

// Resolve follows aliases to the node they name.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// Lookup returns the key and value nodes of key in a mapping, or nils.
func Lookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	m = Resolve(m)
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

// kindName names a node's kind as messages speak of it.
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

// JoinPath appends a key to a dotted field path.
func JoinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// Merged returns a deep copy of base with overlay's mapping fields laid over it: mappings merge
// key by key, anything else replaces. Positions are kept, so errors point at the line that set
// the value.
func Merged(base, overlay *yaml.Node) *yaml.Node {
	base, overlay = Resolve(base), Resolve(overlay)
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
				out.Content[j+1] = Merged(out.Content[j+1], v)
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

// SetPath returns a copy of root with the value at a dotted path replaced by val, creating
// mappings on the way.
func SetPath(root *yaml.Node, path []string, val *yaml.Node) *yaml.Node {
	overlay := val
	for i := len(path) - 1; i >= 0; i-- {
		overlay = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: val.Line, Column: val.Column,
			Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: path[i], Line: val.Line, Column: val.Column}, overlay}}
	}
	return Merged(root, overlay)
}

// NodeAt finds the node at a JSON pointer (as jsonschema reports instance locations).
func NodeAt(root *yaml.Node, pointer string) (*yaml.Node, string) {
	n := Resolve(root)
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = Resolve(n.Content[0])
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
			_, v := Lookup(n, tok)
			if v == nil {
				return n, path
			}
			n, path = Resolve(v), JoinPath(path, tok)
		case n.Kind == yaml.SequenceNode:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.Content) {
				return n, path
			}
			n, path = Resolve(n.Content[i]), fmt.Sprintf("%s[%d]", path, i)
		default:
			return n, path
		}
	}
	return n, path
}

// Describe renders a scalar as the user wrote it, for messages.
func Describe(n *yaml.Node) string {
	n = Resolve(n)
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
