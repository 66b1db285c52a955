package yamldoc

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Converted is a document as a JSON Schema validator reads it, and what converting it found.
type Converted struct {
	Value any
	// Diags lists what neither yaml.v3 nor the schema reports: duplicate keys, merge keys,
	// non-string keys, excessive depth or alias expansion, non-finite numbers.
	Diags     Diagnostics
	nonFinite [][2]int // line, col of .nan and .inf values, reported in Diags
}

// NonFinite reports whether a non-finite number at line, col was reported already, so that
// the schema's "not a number" at the same place is not said a second time.
func (c Converted) NonFinite(line, col int) bool {
	for _, p := range c.nonFinite {
		if p == [2]int{line, col} {
			return true
		}
	}
	return false
}

// ToJSON converts a document for a JSON Schema validator, enforcing the limits. ok is false
// when the document cannot be validated at all; Diags then says why.
func ToJSON(file string, root *yaml.Node) (Converted, bool) {
	c := &checker{file: file}
	v, ok := c.toJSON(root, "", 0)
	return Converted{Value: v, Diags: c.diags, nonFinite: c.nonFinite}, ok
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
			k, v := Resolve(n.Content[i]), n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				c.add(k, path, "a key must be a plain name, not a %s", kindName(k))
				return nil, false
			}
			if k.Tag == "!!merge" {
				c.add(k, path, "merge keys (<<) are not supported: write the fields out, or use a variant")
				return nil, false
			}
			if first, dup := seen[k.Value]; dup {
				c.add(k, JoinPath(path, k.Value), "duplicate key (first set at line %d)", first.Line)
				continue
			}
			seen[k.Value] = k
			val, ok := c.toJSON(v, JoinPath(path, k.Value), depth+1)
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
