package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/kalab-dev/kalab/engine/adapter"
	"github.com/kalab-dev/kalab/engine/internal/suggest"
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
		c.DefaultDraft(jsonschema.Draft2020)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.Scenario))
		if err == nil {
			err = c.AddResource(schema.ScenarioURL, doc)
		}
		if err != nil {
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
	keys := keyFinder{root: root, seen: map[string]int{}}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		// A key that fails propertyNames is reported at the mapping that holds it (its
		// causes validate the key as an instance of its own, with no location).
		pn, isKey := e.ErrorKind.(*kind.PropertyNames)
		if len(e.Causes) == 0 || isKey {
			loc := pointer(e.InstanceLocation)
			if isKey {
				loc = keys.mapping(e.SchemaURL, pn.Property)
			}
			if _, ok := byLoc[loc]; !ok {
				order = append(order, loc)
			}
			byLoc[loc] = append(byLoc[loc], e)
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
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				key, _ := lookup(n, name)
				msg := fmt.Sprintf("unknown field %q", name)
				if s := suggest.Closest(name, allowedKeys(e.SchemaURL)); s != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				}
				diags = append(diags, at(key, joinPath(path, name), msg))
			}
		case *kind.Required:
			diags = append(diags, at(n, path, "missing required field "+strings.Join(k.Missing, ", ")))
		case *kind.PropertyNames:
			key, _ := lookup(n, k.Property)
			diags = append(diags, at(key, joinPath(path, k.Property), badKey(field, k.Property, e)))
		default:
			rest = append(rest, e)
		}
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
	case viaDef(rest, "duration"):
		return append(diags, at(n, path, value+" is not a duration (use e.g. 1500ms, 2s or none)"))
	}
	msgs := make([]string, 0, len(rest))
	for _, e := range rest {
		msgs = append(msgs, rephrase(value, e.ErrorKind))
	}
	sort.Strings(msgs)
	msgs = dedupe(msgs)
	return append(diags, at(n, path, strings.Join(msgs, "; ")))
}

// badKey says why a mapping's key is not allowed, for the mappings whose keys are data.
func badKey(field, key string, e *jsonschema.ValidationError) string {
	switch field {
	case "matrix":
		return "matrix keys are field paths such as network.rtt or client.idle_timeout"
	case "headers":
		return "header names are HTTP tokens: letters, digits and !#$%&'*+-.^_`|~, no spaces"
	}
	var msgs []string
	for _, c := range e.Causes {
		msgs = append(msgs, rephrase(fmt.Sprintf("%q", key), c.ErrorKind))
	}
	return "key " + strings.Join(msgs, "; ")
}

// english prints the validator's own message for a kind of failure kalab does not rephrase.
var english = message.NewPrinter(language.English)

// rephrase turns a validator failure into a message that names the value and what would fit.
func rephrase(value string, k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Enum:
		var opts []string
		seen := map[string]bool{}
		for _, w := range k.Want {
			o := fmt.Sprint(w)
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
	case *kind.Maximum:
		return fmt.Sprintf("%s is above the maximum, %s", value, rat(k.Want))
	case *kind.Minimum:
		return fmt.Sprintf("%s is below the minimum, %s", value, rat(k.Want))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s must be more than %s", value, rat(k.Want))
	case *kind.MinItems:
		if k.Got == 0 {
			return fmt.Sprintf("the list is empty; give at least %d value", k.Want)
		}
	case *kind.Pattern:
		return fmt.Sprintf("%s: does not match pattern '%s'", value, k.Want)
	case *kind.Const:
		want, _ := json.Marshal(k.Want)
		return fmt.Sprintf("%s: value must be %s", value, want)
	case *kind.Type:
		if len(k.Want) == 1 {
			want := map[string]string{"integer": "a whole number", "number": "a number", "boolean": "true or false",
				"string": "text", "object": "a mapping of fields", "array": "a list"}[k.Want[0]]
			if want == "" {
				want = k.Want[0]
			}
			return fmt.Sprintf("%s is not %s", value, want)
		}
	}
	return value + ": " + k.LocalizedString(english)
}

// rat prints a schema bound as people write it (1000000, not 1e+06).
func rat(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return number(r.RatString())
	}
	return number(r.FloatString(6))
}

// pointer is an instance location as a JSON pointer (what nodeAt reads).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// viaDef reports whether a failure comes from the schema's $defs/<def>.
func viaDef(errs []*jsonschema.ValidationError, def string) bool {
	for _, e := range errs {
		if _, frag, _ := strings.Cut(e.SchemaURL, "#"); frag == "/$defs/"+def || strings.HasPrefix(frag, "/$defs/"+def+"/") {
			return true
		}
	}
	return false
}

// viaKeyword reports whether a failure comes from the keyword kw, or from a subschema under it.
func viaKeyword(errs []*jsonschema.ValidationError, kw string) bool {
	for _, e := range errs {
		if slices.Contains(e.ErrorKind.KeywordPath(), kw) || strings.Contains(e.SchemaURL, "/"+kw) {
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
// came from (its schema location).
func allowedKeys(schemaURL string) []string {
	_, frag, ok := strings.Cut(schemaURL, "#")
	if !ok {
		return nil
	}
	obj := schemaPointer(frag)
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

// keyFinder finds the mapping that holds a key which failed propertyNames. jsonschema v6.0.3
// gives such an error the validator's own location slice without copying it
// (validator.go: verr.InstanceLocation = vd.vloc), so later siblings overwrite it and the
// location read afterwards can name another field (seen here: "name.rtt" for "matrix.rtt",
// depending on map order). The field is read from the schema location instead
// (".../properties/matrix/propertyNames"), and the YAML is searched for a mapping under
// that field name holding the key; a second error for the same field and key takes the
// second such mapping, in document order.
type keyFinder struct {
	root *yaml.Node
	seen map[string]int
}

func (f keyFinder) mapping(schemaURL, key string) string {
	_, frag, _ := strings.Cut(schemaURL, "#")
	toks := strings.Split(strings.TrimSuffix(frag, "/propertyNames"), "/")
	field := toks[len(toks)-1]
	var found []string
	var search func(n *yaml.Node, path []string, name string)
	search = func(n *yaml.Node, path []string, name string) {
		n = resolve(n)
		if n == nil {
			return
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				search(c, path, name)
			}
		case yaml.MappingNode:
			if name == field {
				if k, _ := lookup(n, key); k != nil {
					found = append(found, pointer(path))
				}
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				search(n.Content[i+1], append(slices.Clone(path), n.Content[i].Value), n.Content[i].Value)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				search(c, append(slices.Clone(path), strconv.Itoa(i)), name)
			}
		}
	}
	search(f.root, nil, "")
	id := field + "\x00" + key
	i := f.seen[id]
	f.seen[id]++
	if i < len(found) {
		return found[i]
	}
	return "" // not found: the document's root
}
