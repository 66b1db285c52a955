// Package schemacheck validates a scenario document against the embedded JSON Schema
// (schema/scenario.schema.json) and turns each failure into a message a person can act
// on, at the YAML node it concerns; it also answers which settings fields the schema has.
package schemacheck

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
	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
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

// Validate checks a document against the scenario schema and maps each failure back to
// the YAML node it concerns.
func Validate(file string, root *yaml.Node, doc any) yamldoc.Diagnostics {
	s, err := scenarioSchema()
	if err != nil {
		return yamldoc.Diagnostics{{File: file, Message: err.Error()}}
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return yamldoc.Diagnostics{{File: file, Message: err.Error()}}
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
		for _, c := range fittingBranches(e) {
			walk(c)
		}
	}
	walk(ve)
	var diags yamldoc.Diagnostics
	for _, loc := range order {
		diags = append(diags, explain(file, root, loc, byLoc[loc])...)
	}
	return diags
}

// place is a location the schema failed at: its node, dotted path and last field name.
type place struct {
	file  string
	n     *yaml.Node
	path  string
	field string
}

// at is a diagnostic at node (the place's own node, or a key under it).
func (pl place) at(node *yaml.Node, path, msg string) yamldoc.Diagnostic {
	d := yamldoc.Diagnostic{File: pl.file, Path: path, Message: msg}
	if node != nil {
		d.Line, d.Col = node.Line, node.Column
	}
	return d
}

// explain turns the schema failures at one location into messages a person can act on.
func explain(file string, root *yaml.Node, loc string, errs []*jsonschema.ValidationError) yamldoc.Diagnostics {
	n, path := yamldoc.NodeAt(root, loc)
	field := path
	if i := strings.LastIndexAny(field, ".]"); i >= 0 {
		field = field[i+1:]
	}
	pl := place{file: file, n: n, path: path, field: field}
	diags, rest := keyProblems(pl, errs)
	if len(rest) == 0 {
		return diags
	}
	return append(diags, valueProblems(pl, rest)...)
}

// keyProblems explains the failures about a mapping's keys (unknown, missing, malformed),
// pointing at the key itself and suggesting the closest allowed one; it returns the other
// failures as rest.
func keyProblems(pl place, errs []*jsonschema.ValidationError) (diags yamldoc.Diagnostics, rest []*jsonschema.ValidationError) {
	rest = errs[:0:0]
	for _, e := range errs {
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				key, _ := yamldoc.Lookup(pl.n, name)
				msg := fmt.Sprintf("unknown field %q", name)
				if s := suggest.Closest(name, allowedKeys(e.SchemaURL)); s != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", s)
				}
				diags = append(diags, pl.at(key, yamldoc.JoinPath(pl.path, name), msg))
			}
		case *kind.Required:
			diags = append(diags, pl.at(pl.n, pl.path, "missing required field "+strings.Join(k.Missing, ", ")))
		case *kind.PropertyNames:
			key, _ := yamldoc.Lookup(pl.n, k.Property)
			diags = append(diags, pl.at(key, yamldoc.JoinPath(pl.path, k.Property), badKey(pl.field, k.Property, e)))
		default:
			rest = append(rest, e)
		}
	}
	return diags, rest
}

// valueProblems explains the failures about the value at a place in one message: the
// fields whose form a person knows by name get their own, the rest are rephrased.
func valueProblems(pl place, rest []*jsonschema.ValidationError) yamldoc.Diagnostics {
	n, value := pl.n, yamldoc.Describe(pl.n)
	switch {
	case pl.field == "keepalive_hint":
		return yamldoc.Diagnostics{pl.at(n, pl.path, value+" is not a Keep-Alive hint (use false, true, a duration such as 5s, or a raw value such as \"timeout=5, max=100\")")}
	case pl.field == "exec" && (strings.HasSuffix(pl.path, "server.exec") || strings.HasPrefix(pl.path, "balancer")):
		break // a server's or a balancer's kind: the schema's own list (nginx, haproxy, ...) says what is known
	case pl.field == "exec" && n != nil && n.Kind == yaml.ScalarNode:
		msg := value + " is not a bundled adapter (" + strings.Join(adapter.Names(), ", ") + "); your own program is {command: [program, args...]}"
		if s := suggest.Closest(n.Value, adapter.Names()); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return yamldoc.Diagnostics{pl.at(n, pl.path, msg)}
	case pl.field == "exec":
		return nil // a mapping: its own fields' errors say what is wrong
	case pl.field == "pause":
		return yamldoc.Diagnostics{pl.at(n, pl.path, value+" is not a duration or range (use e.g. 2s or 1.5s..2.5s)")}
	case pl.field == "name" && viaKeyword(rest, "pattern"):
		return yamldoc.Diagnostics{pl.at(n, pl.path, value+" is not a valid name: use letters, digits, '.', '_' and '-' (at most 80), starting with a letter or digit")}
	case viaDef(rest, "duration"):
		return yamldoc.Diagnostics{pl.at(n, pl.path, value+" is not a duration (use e.g. 1500ms, 2s or none)")}
	}
	msgs := make([]string, 0, len(rest))
	for _, e := range rest {
		msgs = append(msgs, rephrase(value, e.ErrorKind))
	}
	sort.Strings(msgs)
	msgs = dedupe(msgs)
	return yamldoc.Diagnostics{pl.at(n, pl.path, strings.Join(msgs, "; "))}
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

// Field says whether a dotted settings path (network.rtt, client.retry.attempts) names a
// field of the schema and, when it names a group of fields, the first of them by name
// (first is "" for a single field).
func Field(path string) (exists bool, first string) {
	fs := fieldSchema(path)
	if fs == nil {
		return false, ""
	}
	if _, isGroup := fs["properties"]; isGroup {
		return true, firstProperty(fs)
	}
	return true, ""
}

func firstProperty(fs map[string]any) string {
	props, _ := fs["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "field"
	}
	return keys[0]
}

// fieldSchema finds the schema of a dotted settings path, following $refs; nil when no
// such field exists.
func fieldSchema(path string) map[string]any {
	if _, err := scenarioSchema(); err != nil {
		return nil
	}
	cur := schemaDoc
	for _, part := range strings.Split(path, ".") {
		cur = oneOrList(deref(cur))
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[part].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return deref(cur)
}

// oneOrList is the object of a "one object or a list of them" schema (middlebox), whose
// fields a path names as the lone object's; any other schema as it is.
func oneOrList(m map[string]any) map[string]any {
	branches, _ := m["oneOf"].([]any)
	if len(branches) != 2 {
		return m
	}
	one, _ := branches[0].(map[string]any)
	list, _ := branches[1].(map[string]any)
	if list["type"] != "array" || one == nil {
		return m
	}
	return deref(one)
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
// gives such an error the validator's own location slice without copying it, so later
// siblings overwrite it and the location read afterwards can name another field (seen
// here: "name.rtt" for "matrix.rtt", depending on map order). The field is read from the
// schema location instead
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
		n = yamldoc.Resolve(n)
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
				if k, _ := yamldoc.Lookup(n, key); k != nil {
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

// fittingBranches are the causes of a failure worth reporting: of a oneOf, the branches
// whose type the value has (a list given where one object or a list is allowed is judged
// as a list, not also as "not a mapping"), unless every branch failed on its type.
func fittingBranches(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if _, ok := e.ErrorKind.(*kind.OneOf); !ok {
		return e.Causes
	}
	var fit []*jsonschema.ValidationError
	for _, c := range e.Causes {
		if !wrongType(c, pointer(e.InstanceLocation)) {
			fit = append(fit, c)
		}
	}
	if len(fit) == 0 {
		return e.Causes
	}
	return fit
}

// wrongType reports whether every leaf of a failure is a type mismatch of the value at loc.
func wrongType(e *jsonschema.ValidationError, loc string) bool {
	if len(e.Causes) == 0 {
		_, isType := e.ErrorKind.(*kind.Type)
		return isType && pointer(e.InstanceLocation) == loc
	}
	for _, c := range e.Causes {
		if !wrongType(c, loc) {
			return false
		}
	}
	return true
}
