// Package target is what a sweep sets: one run of a scenario file with one parameter to
// set, the file's YAML edited for each value and loaded again as usual.
package target

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Target is one run of a scenario file with one parameter to set: the file's YAML is
// edited (the parameter in the run's variant, the other variants and the compare checks
// removed) and loaded again as usual, so the schema, the presets and every check of the
// loader apply to each value unchanged.
type Target struct {
	File  string
	Param string // as the user wrote it
	// Run is the variant swept; empty for a file without variants.
	Run string
	// Until replaces the run's checks when not empty.
	Until string
	// Duration says the values are durations, in seconds; otherwise plain numbers.
	Duration bool
	// Base is the run as the file describes it, before any value is set.
	Base *scenario.Run

	data  []byte
	field []string // the YAML path set
	bound string   // "min" or "max" for one bound of load.pause; empty otherwise
	// box is the place of the box or balancer whose field is set (middlebox.N.FIELD,
	// balancer.N.FIELD), field then the path inside it; -1 otherwise.
	box int
}

// aliases maps parameter names to the field they set.
var aliases = map[string]string{
	"client.retry": "client.retry.attempts",
}

// Open loads the file as it is (an error there is the file's own, with its positions, a
// scenario.Diagnostics) and checks that run and until name something in it.
func Open(file, param, run, until string, duration bool) (*Target, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if len(data) > scenario.MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d KiB", file, scenario.MaxFileSize>>10)
	}
	return open(file, data, param, run, until, duration)
}

// Fix returns a target for param over the file with this target's parameter set to v: the
// rows of a two-parameter map.
func (t *Target) Fix(v float64, param string, duration bool) (*Target, error) {
	data, err := t.edited(v)
	if err != nil {
		return nil, err
	}
	return open(t.File, data, param, t.Run, t.Until, duration)
}

func open(file string, data []byte, param, run, until string, duration bool) (*Target, error) {
	s, diags := scenario.Parse(file, data)
	if len(diags) > 0 {
		return nil, diags
	}
	if s == nil {
		return nil, fmt.Errorf("%s: not a scenario", file)
	}
	t := &Target{File: file, Param: param, Until: until, Duration: duration, data: data, box: -1}
	if err := t.setParam(param); err != nil {
		return nil, err
	}
	sc := s.Scenario
	names := make([]string, 0, len(sc.Runs))
	for _, r := range sc.Runs {
		names = append(names, r.Variant)
		if r.Variant == run || (run == "" && len(sc.Runs) == 1) {
			t.Base = r
		}
	}
	if t.Base == nil {
		if run == "" {
			return nil, fmt.Errorf("%s has %d runs; name the one to sweep with --run (%s)", file, len(sc.Runs), strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("%s has no run %q (it has %s)", file, run, strings.Join(names, ", "))
	}
	if len(t.Base.Matrix) > 0 {
		return nil, fmt.Errorf("%s: run %q comes from a matrix; write the cell to sweep as a variant", file, run)
	}
	if t.Base.Variant != "default" || run != "" {
		t.Run = t.Base.Variant
	}
	if listKey(t.field[0]) {
		// A box's (balancer's) field goes into the run's own list: a list without N, or N
		// beyond the list, is refused here, before anything runs.
		if _, err := t.edited(0); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Target) setParam(param string) error {
	path := param
	if a, ok := aliases[path]; ok {
		path = a
	}
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if p == "" {
			return fmt.Errorf("--param %q: a field path is names joined by dots, such as client.idle_timeout", param)
		}
	}
	if len(parts) < 2 {
		return fmt.Errorf("--param %q: name a field inside a section, such as client.idle_timeout", param)
	}
	if n, field, indexed, ok := geometry.BoxParam(path); ok && indexed {
		if n < 0 {
			return fmt.Errorf("--param %s: a box's place N counts from 0, the box nearest the client", param)
		}
		t.box, parts = n, append([]string{"middlebox"}, strings.Split(field, ".")...)
	}
	if head, tail, ok := strings.Cut(strings.TrimPrefix(path, "balancer."), "."); strings.HasPrefix(path, "balancer.") && ok {
		if n, err := strconv.Atoi(head); err == nil {
			if n < 0 {
				return fmt.Errorf("--param %s: a balancer's place N counts from 0, the balancer nearest the client", param)
			}
			t.box, parts = n, append([]string{"balancer"}, strings.Split(tail, ".")...)
		}
	}
	if n := len(parts); n == 3 && parts[0] == "load" && parts[1] == "pause" && (parts[2] == "min" || parts[2] == "max") {
		t.bound, parts = parts[2], parts[:2]
		if !t.Duration {
			return fmt.Errorf("--param %s takes durations", param)
		}
	}
	t.field = parts
	return nil
}

// Format writes a value as the scenario file would.
func (t *Target) Format(v float64) string {
	if t.Duration {
		d := time.Duration(math.Round(v * 1e9)).Round(time.Microsecond)
		return scenario.Duration(d).String()
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Plan loads the file with the parameter set to v, as a plan of one run. An error is a
// scenario.Diagnostics about the edited file (positions are of the edited text) or a
// message saying why the edit could not be made.
func (t *Target) Plan(v float64) (*scenario.Plan, error) {
	data, err := t.edited(v)
	if err != nil {
		return nil, err
	}
	s, diags := scenario.Parse(t.File, data)
	if len(diags) > 0 {
		return nil, t.describe(v, diags)
	}
	if s == nil || len(s.Runs) != 1 {
		return nil, fmt.Errorf("%s=%s: the edited file did not give one run", t.Param, t.Format(v))
	}
	return &scenario.Plan{Scenarios: []*scenario.Scenario{s.Scenario}}, nil
}

// edited is the file's YAML with the parameter set to v, the other runs left out.
func (t *Target) edited(v float64) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(t.data, &doc); err != nil {
		return nil, err
	}
	if err := t.edit(doc.Content[0], v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// describe turns the edited file's diagnostics into messages about the value: their
// positions are of the edited text, not of the user's file.
func (t *Target) describe(v float64, diags scenario.Diagnostics) error {
	var lines []string
	for _, d := range diags {
		msg := d.Message
		if d.Path != "" {
			msg = d.Path + ": " + msg
		}
		lines = append(lines, fmt.Sprintf("--param %s=%s: %s", t.Param, t.Format(v), msg))
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

// edit keeps only the swept run, sets the value in it and replaces the checks by Until.
func (t *Target) edit(root *yaml.Node, v float64) error {
	drop(root, "compare")
	target := root
	if _, list := get(root, "variants"); list != nil {
		kept := slices.DeleteFunc(slices.Clone(list.Content), func(n *yaml.Node) bool {
			_, name := get(n, "name")
			return name == nil || name.Value != t.Run
		})
		if len(kept) != 1 {
			return fmt.Errorf("%s: variant %q not found", t.File, t.Run)
		}
		list.Content = kept
		target = kept[0]
	}
	if t.Until != "" {
		drop(root, "expect")
		drop(target, "expect")
		set(root, []string{"expect"}, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq",
			Content: []*yaml.Node{scalar(t.Until)}})
	}
	value := t.Format(v)
	if t.bound != "" {
		r := t.Base.Settings.Load.Pause
		lo, hi := r.Min.String(), r.Max.String()
		if t.bound == "min" {
			lo = value
		} else {
			hi = value
		}
		value = lo + ".." + hi
	}
	val := scalar(value)
	if !t.Duration {
		val.Tag = "!!float"
		if _, err := strconv.ParseInt(value, 10, 64); err == nil {
			val.Tag = "!!int"
		}
	}
	if listKey(t.field[0]) {
		return t.setBox(root, target, val)
	}
	set(target, t.field, val)
	return nil
}

// listKey reports whether a section may be a list (a chain) whose items --param names
// by their place.
func listKey(key string) bool { return key == "middlebox" || key == "balancer" }

// setBox sets a field of the run's middlebox (balancer): of item N of its list
// (middlebox.N.FIELD), or of its one item (middlebox.FIELD). The list is the run's: the
// variant's when it gives one (it replaces the file's whole), else the file's.
func (t *Target) setBox(root, target *yaml.Node, val *yaml.Node) error {
	key := t.field[0]
	noun := map[string]string{"middlebox": "box", "balancer": "balancer"}[key]
	owner := target
	_, boxes := get(target, key)
	if boxes == nil && target != root {
		owner = root
		_, boxes = get(root, key)
	}
	field := strings.Join(t.field[1:], ".")
	switch {
	case t.box < 0 && boxes != nil && boxes.Kind == yaml.SequenceNode:
		return fmt.Errorf("--param %s: the run's %s is a list of %s (a chain); name one by its place from the client, from 0: --param %s.0.%s%s",
			t.Param, key, count(len(boxes.Content), noun), key, field, lastItem(key, len(boxes.Content), field))
	case t.box < 0:
		set(owner, t.field, val)
		return nil
	case boxes == nil:
		return fmt.Errorf("--param %s: the run has no %s", t.Param, key)
	case boxes.Kind != yaml.SequenceNode:
		return fmt.Errorf("--param %s: the run's %s is one %s, not a list: --param %s.%s", t.Param, key, noun, key, field)
	case t.box >= len(boxes.Content):
		return fmt.Errorf("--param %s: the run's %s is a list of %s; N counts from 0 (the %s nearest the client) to %d",
			t.Param, key, count(len(boxes.Content), noun), noun, len(boxes.Content)-1)
	}
	item := boxes.Content[t.box]
	if item.Kind == yaml.AliasNode {
		// An alias's item is copied, so that the value goes to this place of the path only.
		c := *item.Alias
		c.Content, c.Anchor = slices.Clone(c.Content), ""
		boxes.Content[t.box], item = &c, &c
	}
	if item.Kind != yaml.MappingNode {
		return fmt.Errorf("--param %s: %s %d of the run's %s list is not a mapping", t.Param, noun, t.box, key)
	}
	set(item, t.field[1:], val)
	return nil
}

// count is a count of boxes (balancers) in words.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, map[string]string{"box": "boxes", "balancer": "balancers"}[noun])
}

// lastItem names the last place of a list of n items, when there is more than one.
func lastItem(key string, n int, field string) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" to %s.%d.%s", key, n-1, field)
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// get returns the key and value of key in a mapping (aliases followed), or nils.
func get(m *yaml.Node, key string) (k, v *yaml.Node) {
	for m != nil && m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			for v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return m.Content[i], v
		}
	}
	return nil, nil
}

func drop(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// set puts val at a dotted path under m, creating mappings on the way; a scalar or flow
// value on the way is replaced by a mapping (the loader then reports what it lost).
func set(m *yaml.Node, path []string, val *yaml.Node) {
	for i, key := range path {
		_, next := get(m, key)
		if i == len(path)-1 {
			if next != nil {
				drop(m, key)
			}
			m.Content = append(m.Content, scalar(key), val)
			return
		}
		if next == nil || next.Kind != yaml.MappingNode {
			if next != nil {
				drop(m, key)
			}
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			m.Content = append(m.Content, scalar(key), next)
		}
		// A flow mapping ({idle_timeout: 1s}) is written back in block style beside the new key.
		next.Style = 0
		m = next
	}
}
