package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/adapter"
	"github.com/kalab-dev/kalab/engine/suggest"
	"github.com/kalab-dev/kalab/schema"
)

var (
	schemaOnce sync.Once
	compiled   *jsonschema.Schema
	schemaDoc  map[string]any
	schemaErr  error
)

func scenarioSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		if err := c.AddResource(schema.ScenarioURL, bytes.NewReader(schema.Scenario)); err != nil {
			schemaErr = fmt.Errorf("embedded scenario schema: %w", err)
			return
		}
		compiled, schemaErr = c.Compile(schema.ScenarioURL)
		if schemaErr == nil {
			schemaErr = json.Unmarshal(schema.Scenario, &schemaDoc)
		}
	})
	return compiled, schemaErr
}

var (
	reNotAllowed = regexp.MustCompile(`^additionalProperties (.+) not allowed$`)
	reQuoted     = regexp.MustCompile(`'([^']*)'`)
	reMissing    = regexp.MustCompile(`^missing properties: (.+)$`)
)

// validateSchema checks a document against the scenario schema and maps each failure back to
// the YAML node it concerns.
func validateSchema(file string, root *yaml.Node, doc any) Diagnostics {
	s, err := scenarioSchema()
	if err != nil {
		return Diagnostics{{File: file, Message: err.Error()}}
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Diagnostics{{File: file, Message: err.Error()}}
	}
	// Group the leaf errors by instance location: one message per place.
	byLoc := map[string][]*jsonschema.ValidationError{}
	var order []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if _, ok := byLoc[e.InstanceLocation]; !ok {
				order = append(order, e.InstanceLocation)
			}
			byLoc[e.InstanceLocation] = append(byLoc[e.InstanceLocation], e)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	var diags Diagnostics
	for _, loc := range order {
		diags = append(diags, explain(file, root, loc, byLoc[loc])...)
	}
	return diags
}

// explain turns the schema failures at one location into messages a person can act on.
func explain(file string, root *yaml.Node, loc string, errs []*jsonschema.ValidationError) Diagnostics {
	n, path := nodeAt(root, loc)
	at := func(node *yaml.Node, p, msg string) Diagnostic {
		d := Diagnostic{File: file, Path: p, Message: msg}
		if node != nil {
			d.Line, d.Col = node.Line, node.Column
		}
		return d
	}
	field := path
	if i := strings.LastIndexAny(field, ".]"); i >= 0 {
		field = field[i+1:]
	}
	// Unknown keys: point at the key itself and suggest the closest allowed one.
	var diags Diagnostics
	rest := errs[:0:0]
	for _, e := range errs {
		if m := reNotAllowed.FindStringSubmatch(e.Message); m != nil {
			for _, q := range reQuoted.FindAllStringSubmatch(m[1], -1) {
				k, _ := lookup(n, q[1])
				msg := fmt.Sprintf("unknown field %q", q[1])
				if s := suggest.Closest(q[1], allowedKeys(e.AbsoluteKeywordLocation)); s != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				}
				diags = append(diags, at(k, joinPath(path, q[1]), msg))
			}
			continue
		}
		if m := reMissing.FindStringSubmatch(e.Message); m != nil {
			var names []string
			for _, q := range reQuoted.FindAllStringSubmatch(m[1], -1) {
				names = append(names, q[1])
			}
			diags = append(diags, at(n, path, "missing required field "+strings.Join(names, ", ")))
			continue
		}
		rest = append(rest, e)
	}
	if len(rest) == 0 {
		return diags
	}
	value := describe(n)
	switch {
	case field == "keepalive_hint":
		return append(diags, at(n, path, value+" is not a Keep-Alive hint (use false, true, a duration such as 5s, or a raw value such as \"timeout=5, max=100\")"))
	case field == "exec" && n != nil && n.Kind == yaml.ScalarNode:
		msg := value + " is not a bundled adapter (" + strings.Join(adapter.Names(), ", ") + "); your own program is {command: [program, args...]}"
		if s := suggest.Closest(n.Value, adapter.Names()); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return append(diags, at(n, path, msg))
	case field == "exec":
		return diags // a mapping: its own fields' errors say what is wrong
	case field == "pause":
		return append(diags, at(n, path, value+" is not a duration or range (use e.g. 2s or 1.5s..2.5s)"))
	case field == "name" && viaKeyword(rest, "pattern"):
		return append(diags, at(n, path, value+" is not a valid name: use letters, digits, '.', '_' and '-' (at most 80), starting with a letter or digit"))
	case field == "headers" && viaKeyword(rest, "propertyNames"):
		return append(diags, at(n, path, "header names are HTTP tokens: letters, digits and !#$%&'*+-.^_`|~, no spaces"))
	case viaDef(rest, "duration"):
		return append(diags, at(n, path, value+" is not a duration (use e.g. 1500ms, 2s or none)"))
	case strings.HasPrefix(path, "matrix.") || (path == "matrix" && viaKeyword(rest, "propertyNames")):
		for _, e := range rest {
			if strings.Contains(e.KeywordLocation, "propertyNames") {
				return append(diags, at(n, path, "matrix keys are field paths such as network.rtt or client.idle_timeout"))
			}
		}
	}
	msgs := make([]string, 0, len(rest))
	for _, e := range rest {
		msgs = append(msgs, rephrase(value, e.Message))
	}
	sort.Strings(msgs)
	msgs = dedupe(msgs)
	return append(diags, at(n, path, strings.Join(msgs, "; ")))
}

var (
	reOneOf    = regexp.MustCompile(`^value must be one of (.+)$`)
	reMax      = regexp.MustCompile(`^must be <= (\S+) but found`)
	reMin      = regexp.MustCompile(`^must be >= (\S+) but found`)
	reExclMin  = regexp.MustCompile(`^must be > (\S+) but found`)
	reExpected = regexp.MustCompile(`^expected (\w+), but got (\w+)$`)
	reMinItems = regexp.MustCompile(`^minimum (\d+) items required, but found 0 items$`)
	reEnumItem = regexp.MustCompile(`"[^"]*"|[^\s,]+`)
)

// rephrase turns a validator message into one that names the value and what would fit.
func rephrase(value, msg string) string {
	if m := reOneOf.FindStringSubmatch(msg); m != nil {
		var opts []string
		seen := map[string]bool{}
		for _, o := range reEnumItem.FindAllString(m[1], -1) {
			o = strings.Trim(o, `"`)
			if !seen[o] {
				seen[o] = true
				opts = append(opts, o)
			}
		}
		out := fmt.Sprintf("%s is not one of %s", value, strings.Join(opts, ", "))
		if s := suggest.Closest(strings.Trim(value, `"`), opts); s != "" {
			out += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return out
	}
	if m := reMax.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s is above the maximum, %s", value, number(m[1]))
	}
	if m := reMin.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s is below the minimum, %s", value, number(m[1]))
	}
	if m := reMinItems.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("the list is empty; give at least %s value", m[1])
	}
	if m := reExclMin.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s must be more than %s", value, m[1])
	}
	if m := reExpected.FindStringSubmatch(msg); m != nil {
		want := map[string]string{"integer": "a whole number", "number": "a number", "boolean": "true or false",
			"string": "text", "object": "a mapping of fields", "array": "a list"}[m[1]]
		if want == "" {
			want = m[1]
		}
		return fmt.Sprintf("%s is not %s", value, want)
	}
	return value + ": " + msg
}

func viaDef(errs []*jsonschema.ValidationError, def string) bool {
	for _, e := range errs {
		if strings.Contains(e.AbsoluteKeywordLocation, "#/$defs/"+def+"/") {
			return true
		}
	}
	return false
}

func viaKeyword(errs []*jsonschema.ValidationError, kw string) bool {
	for _, e := range errs {
		if strings.Contains(e.KeywordLocation, kw) {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// allowedKeys reads the property names of the schema object an additionalProperties error
// came from (its absolute keyword location ends in /additionalProperties).
func allowedKeys(absLoc string) []string {
	_, frag, ok := strings.Cut(absLoc, "#")
	if !ok {
		return nil
	}
	obj := schemaPointer(strings.TrimSuffix(frag, "/additionalProperties"))
	props, _ := obj["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// schemaPointer resolves a JSON pointer inside the embedded schema document.
func schemaPointer(ptr string) map[string]any {
	cur := any(schemaDoc)
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}

// fieldSchema finds the schema of a dotted settings path (network.rtt, client.retry.attempts),
// following $refs; nil when no such field exists.
func fieldSchema(path string) map[string]any {
	if _, err := scenarioSchema(); err != nil {
		return nil
	}
	cur := schemaDoc
	for _, part := range strings.Split(path, ".") {
		cur = deref(cur)
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[part].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return deref(cur)
}

func deref(m map[string]any) map[string]any {
	for i := 0; i < 8 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return m
		}
		m = schemaPointer(strings.TrimPrefix(ref, "#"))
	}
	return m
}

// number prints a schema bound as people write it (1000000, not 1e+06).
func number(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return s
	case f >= 9e18:
		return "9223372036854775807"
	case f <= -9e18:
		return "-9223372036854775808"
	case f == float64(int64(f)):
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
