// Package scenario loads scenario files into a Plan: it parses YAML into nodes, validates them
// against the embedded schema with file:line:col messages, applies presets, expands variants
// and matrices, and compiles every assertion, so nothing runs unless the whole input is valid.
package scenario

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/internal/suggest"
	"github.com/kalab-dev/kalab/engine/internal/tolerance"
	"github.com/kalab-dev/kalab/engine/replay"
	"github.com/kalab-dev/kalab/engine/scenario/internal/schemacheck"
	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// Diagnostic is one problem found in a scenario file, with its position.
type Diagnostic = yamldoc.Diagnostic

// Diagnostics is every problem found while loading; it is the error LoadFiles and Parse return.
type Diagnostics = yamldoc.Diagnostics

// MaxFileSize bounds a scenario file; real ones are a few kilobytes.
const MaxFileSize = 1 << 20

// Plan is every run that the loaded files describe, in file order.
type Plan struct {
	Scenarios []*Scenario
}

// Runs returns the number of runs in the plan.
func (p *Plan) Runs() int {
	n := 0
	for _, s := range p.Scenarios {
		n += len(s.Runs)
	}
	return n
}

// Scenario is one loaded file.
type Scenario struct {
	Name        string
	Description string
	File        string
	Runs        []*Run
	Compare     []Assertion
	// Baseline holds the file's baseline tolerance overrides, by metric name; nil when the
	// file sets none.
	Baseline map[string]Tolerance
}

// Run is one scenario x variant: resolved settings plus the checks it must pass.
type Run struct {
	Scenario string
	Variant  string
	Settings Settings
	Expect   []Assertion
	// Matrix holds the matrix values that produced this run, path -> value as written.
	Matrix map[string]string

	durations []durationAt // every duration of Settings and where it was set
	node      *yaml.Node   // the merged settings, for Position
}

// Position returns where the run's settings set a dotted field path (server.idle_timeout),
// through the file, its variant or its matrix; ok is false when the file does not set it
// (the value comes from a default or a preset).
func (r *Run) Position(path string) (line, col int, ok bool) {
	n := r.node
	var key *yaml.Node
	for _, part := range strings.Split(path, ".") {
		if strings.HasSuffix(part, "]") {
			key, n = nil, child(n, part) // an item of a list: middlebox[1], balancer[0]
		} else {
			key, n = yamldoc.Lookup(n, part)
		}
		if n == nil {
			return 0, 0, false
		}
	}
	// A variant's value replaces the file's under the file's key, so a scalar's own
	// position is where it was set.
	if n = yamldoc.Resolve(n); n != nil && n.Kind == yaml.ScalarNode && n.Line > 0 {
		return n.Line, n.Column, true
	}
	if key != nil && key.Line > 0 {
		return key.Line, key.Column, true
	}
	return 0, 0, false
}

// Assertion is a compiled expression and where it was written.
type Assertion struct {
	*check.Assertion
	File string
	Line int
	Col  int
	// style is how the file quotes the expression, so a position inside it counts the
	// quote (yamldoc.ScalarPos).
	style yaml.Style
}

// pos is where byte offset of the expression's source is in the file.
func (a Assertion) pos(offset int) (line, col int) {
	return yamldoc.ScalarPos(&yaml.Node{Line: a.Line, Column: a.Col, Value: a.Source, Style: a.style}, offset)
}

// LoadFiles loads each file and checks names across them. The error, when not nil, is a
// Diagnostics listing every problem found in every file.
func LoadFiles(files []string) (*Plan, error) {
	plan := &Plan{}
	var diags Diagnostics
	byName := map[string]*Scenario{}
	for _, f := range files {
		data, err := readLimited(f)
		if err != nil {
			diags = append(diags, Diagnostic{File: f, Message: err.Error()})
			continue
		}
		s, ds := Parse(f, data)
		diags = append(diags, ds...)
		if s == nil {
			continue
		}
		if first, dup := byName[s.Name]; dup {
			d := Diagnostic{File: f, Path: "name", Message: fmt.Sprintf("scenario name %q is already used by %s", s.Name, first.File)}
			d.Line, d.Col = s.nameLine, s.nameCol
			diags = append(diags, d)
			continue
		}
		byName[s.Name] = s.Scenario
		if len(ds) == 0 {
			plan.Scenarios = append(plan.Scenarios, s.Scenario)
		}
	}
	if len(diags) > 0 {
		return nil, diags.Sorted()
	}
	return plan, nil
}

func readLimited(path string) ([]byte, error) {
	// Stat before open: opening a FIFO blocks until something writes to it.
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, errors.New("is a directory")
	} else if err == nil && !st.Mode().IsRegular() {
		return nil, errors.New("is not a regular file (a scenario is a YAML file)")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", unwrapPath(err))
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", unwrapPath(err))
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d KiB; a scenario file is a few kilobytes of YAML", MaxFileSize>>10)
	}
	return data, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parsed carries what cross-file checks need beyond the Scenario.
type parsed struct {
	*Scenario
	nameLine, nameCol int
}

// Parse loads one scenario from its bytes. It returns nil when the file cannot be read as a
// scenario at all; otherwise the scenario (possibly partial) and every problem found.
func Parse(file string, data []byte) (s *parsed, diags Diagnostics) {
	defer func() {
		// The loader must never take the process down, whatever the input.
		if r := recover(); r != nil {
			s, diags = nil, Diagnostics{{File: file, Message: fmt.Sprintf("internal error while loading (please report): %v", r)}}
		}
	}()
	root, ds := yamldoc.Read(file, data)
	if ds != nil {
		return nil, ds
	}
	c, ok := yamldoc.ToJSON(file, root)
	if !ok {
		return nil, c.Diags
	}
	diags = append(diags, c.Diags...)
	// A non-finite number was passed to the schema as its text; the schema's "not a number"
	// at the same place would say the same thing less clearly.
	for _, d := range schemacheck.Validate(file, root, c.Value) {
		if !c.NonFinite(d.Line, d.Col) {
			diags = append(diags, d)
		}
	}

	l := &loader{file: file, root: root}
	sc := &Scenario{File: file}
	s = &parsed{Scenario: sc}
	if k, v := yamldoc.Lookup(root, "name"); v != nil && v.Kind == yaml.ScalarNode {
		sc.Name, s.nameLine, s.nameCol = v.Value, k.Line, k.Column
	}
	if _, v := yamldoc.Lookup(root, "description"); v != nil {
		sc.Description = v.Value
	}
	expect := l.assertions(root, "expect", check.Expect)
	sc.Compare = l.assertions(root, "compare", check.Compare)
	sc.Baseline = l.baseline(root)
	// With schema errors the settings cannot be decoded, but run names can still be worked
	// out, so that matrix, duplicate-name and compare errors are reported in the same pass.
	sc.Runs = l.expand(sc.Name, expect, len(diags) == 0)
	l.checkCompare(sc)
	l.checkUncounted(sc)
	for _, d := range l.diags {
		if !c.NonFinite(d.Line, d.Col) {
			diags = append(diags, d)
		}
	}
	return s, diags
}

// loader holds one file's state while it is expanded into runs.
type loader struct {
	file    string
	root    *yaml.Node
	diags   Diagnostics
	replays map[replay.Config]replayScan // recordings read, by what was asked of them
}

func (l *loader) add(n *yaml.Node, path, format string, args ...any) {
	d := Diagnostic{File: l.file, Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		d.Line, d.Col = n.Line, n.Column
	}
	l.diags = append(l.diags, d)
}

// assertions compiles the expressions of list key under parent.
func (l *loader) assertions(parent *yaml.Node, key string, kind check.Kind) []Assertion {
	_, list := yamldoc.Lookup(parent, key)
	list = yamldoc.Resolve(list)
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	var out []Assertion
	for _, item := range list.Content {
		item = yamldoc.Resolve(item)
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
			continue // the schema has reported it
		}
		a, err := check.Compile(item.Value, kind)
		if err != nil {
			var ce *check.Error
			line, col := item.Line, item.Column
			if errors.As(err, &ce) {
				line, col = yamldoc.ScalarPos(item, ce.Offset)
			}
			l.diags = append(l.diags, Diagnostic{File: l.file, Line: line, Col: col, Path: key, Message: err.Error()})
			continue
		}
		out = append(out, Assertion{Assertion: a, File: l.file, Line: item.Line, Col: item.Column, style: item.Style})
	}
	return out
}

// baseline reads the baseline tolerance overrides; keys must be metric names, so a typo is a
// load error instead of a tolerance that silently never applies.
func (l *loader) baseline(root *yaml.Node) map[string]Tolerance {
	_, m := yamldoc.Lookup(root, "baseline")
	m = yamldoc.Resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil // absent, or the schema has reported the shape
	}
	out := map[string]Tolerance{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := yamldoc.Resolve(m.Content[i]), yamldoc.Resolve(m.Content[i+1])
		if k == nil || v == nil || k.Kind != yaml.ScalarNode {
			continue
		}
		if !check.IsName(k.Value) {
			msg := fmt.Sprintf("unknown metric %q", k.Value)
			if s := suggest.Closest(k.Value, check.Names()); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			} else {
				msg += " (kalab help metrics lists them)"
			}
			l.add(k, "baseline", "%s", msg)
			continue
		}
		if v.Kind != yaml.ScalarNode || !toleranceShape(v) {
			continue // the schema has reported it
		}
		t, err := tolerance.Parse(v.Value)
		if err != nil {
			l.add(v, "baseline."+k.Value, "%v", err)
			continue
		}
		t.Line, t.Col = k.Line, k.Column
		out[k.Value] = t
	}
	return out
}

var reTolerance = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?%|off)$`)

// toleranceShape reports whether a value has the form the schema allows, so that a value the
// schema rejected is not reported a second time.
func toleranceShape(v *yaml.Node) bool {
	switch v.ShortTag() {
	case "!!int", "!!float":
		return !strings.HasPrefix(strings.TrimSpace(v.Value), "-")
	case "!!str":
		return reTolerance.MatchString(v.Value)
	}
	return false
}

// settingsKeys are the top-level fields a variant or matrix may override.
var settingsKeys = []string{"time_scale", "clock", "network", "server", "client", "balancer", "middlebox", "load", "env"}

// settingsNode extracts the overridable sections of a mapping.
func settingsNode(m *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, key := range settingsKeys {
		if k, v := yamldoc.Lookup(m, key); v != nil {
			out.Content = append(out.Content, k, v)
		}
	}
	return out
}

type matrixAxis struct {
	path   []string
	label  string
	values []*yaml.Node
}

// expand turns the base settings, variants and matrix into runs.
func (l *loader) expand(name string, expect []Assertion, decode bool) []*Run {
	base := settingsNode(l.root)
	axes := l.matrix()
	if axes == nil && l.hasMatrix() {
		return nil
	}
	type variant struct {
		name   string
		node   *yaml.Node
		at     *yaml.Node
		expect []Assertion
	}
	var variants []variant
	if _, list := yamldoc.Lookup(l.root, "variants"); list != nil {
		for _, v := range yamldoc.Resolve(list).Content {
			k, n := yamldoc.Lookup(v, "name")
			if n == nil {
				continue
			}
			variants = append(variants, variant{name: n.Value, node: settingsNode(v), at: k, expect: l.assertions(v, "expect", check.Expect)})
		}
	}
	if len(variants) == 0 {
		variants = []variant{{node: &yaml.Node{Kind: yaml.MappingNode}}}
	}
	cells := cartesian(axes)
	var runs []*Run
	seen := map[string]*yaml.Node{}
	for _, v := range variants {
		if !l.checkChainOverlay(base, v.node, axes) {
			continue
		}
		for _, cell := range cells {
			node := yamldoc.Merged(base, v.node)
			var parts []string
			values := map[string]string{}
			for i, ax := range axes {
				val := ax.values[cell[i]]
				node = yamldoc.SetPath(node, ax.path, val)
				parts = append(parts, ax.label+"="+valueLabel(val))
				values[strings.Join(ax.path, ".")] = valueLabel(val)
			}
			runName := v.name
			if len(parts) > 0 {
				runName = strings.Trim(strings.Join(append([]string{v.name}, parts...), ","), ",")
			}
			if runName == "" {
				runName = "default"
			}
			if first, dup := seen[runName]; dup {
				at := v.at
				if at == nil {
					at = first
				}
				l.add(at, "variants", "variant name %q is used twice (first at line %d)", runName, first.Line)
				continue
			}
			seen[runName] = v.at
			if v.at == nil {
				seen[runName] = l.root
			}
			r := &Run{Scenario: name, Variant: runName, Expect: append(append([]Assertion(nil), expect...), v.expect...)}
			if len(values) > 0 {
				r.Matrix = values
			}
			runs = append(runs, r)
			if !decode {
				continue
			}
			settings, ok := l.decode(node)
			if !ok {
				continue
			}
			r.Settings = settings
			r.node = node
			l.semantic(r, node)
		}
	}
	return runs
}

func (l *loader) hasMatrix() bool {
	_, m := yamldoc.Lookup(l.root, "matrix")
	return m != nil
}

// matrix reads and checks the matrix axes; nil with diagnostics when they are wrong.
func (l *loader) matrix() []matrixAxis {
	_, m := yamldoc.Lookup(l.root, "matrix")
	m = yamldoc.Resolve(m)
	if m == nil {
		return []matrixAxis{}
	}
	var axes []matrixAxis
	lastSeg := map[string]int{}
	ok := true
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, list := m.Content[i], yamldoc.Resolve(m.Content[i+1])
		if !reMatrixKey.MatchString(k.Value) || list == nil || list.Kind != yaml.SequenceNode {
			ok = false // the schema reports the shape
			continue
		}
		path := strings.Split(k.Value, ".")
		exists, first := schemacheck.Field(k.Value)
		if !exists {
			l.add(k, "matrix", "%s is not a field a matrix can vary (use a path such as network.rtt or client.idle_timeout)", k.Value)
			ok = false
			continue
		}
		if first != "" {
			l.add(k, "matrix", "%s is a group of fields; a matrix varies one field, such as %s.%s", k.Value, k.Value, first)
			ok = false
			continue
		}
		// Each value must be valid where it lands: validate it in place, in a synthetic document.
		for _, val := range list.Content {
			doc := yamldoc.SetPath(&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
				{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name"}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: "matrix"},
			}}, path, val)
			if c, vok := yamldoc.ToJSON(l.file, doc); !vok {
				l.diags = append(l.diags, c.Diags...)
				ok = false
			} else if ds := schemacheck.Validate(l.file, doc, c.Value); len(ds) > 0 {
				for i := range ds {
					ds[i].Path = "matrix." + ds[i].Path
				}
				l.diags = append(l.diags, ds...)
				ok = false
			}
		}
		axes = append(axes, matrixAxis{path: path, values: list.Content})
		lastSeg[path[len(path)-1]]++
	}
	if !ok {
		return nil
	}
	for i := range axes {
		last := axes[i].path[len(axes[i].path)-1]
		axes[i].label = last
		if lastSeg[last] > 1 {
			axes[i].label = strings.Join(axes[i].path, ".")
		}
	}
	return axes
}

// cartesian lists every combination of axis value indices, first axis slowest.
func cartesian(axes []matrixAxis) [][]int {
	cells := [][]int{{}}
	for _, ax := range axes {
		var next [][]int
		for _, c := range cells {
			for i := range ax.values {
				next = append(next, append(append([]int(nil), c...), i))
			}
		}
		cells = next
	}
	return cells
}

func valueLabel(n *yaml.Node) string {
	n = yamldoc.Resolve(n)
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, valueLabel(c))
	}
	return strings.Join(parts, "+")
}

// decode resolves presets and decodes a merged settings node onto the defaults.
func (l *loader) decode(node *yaml.Node) (Settings, bool) {
	s := defaultSettings()
	type section struct {
		key string
		reg map[string]*Preset
		dst any
	}
	sections := []section{{"server", ServerPresets, &s.Server}, {"client", ClientPresets, &s.Client}}
	// A balancer section turns the topology into two hops; its defaults exist only then,
	// and the decode below fills the same struct (yaml.v3 decodes into a set pointer).
	_, b := yamldoc.Lookup(node, "balancer")
	switch b = yamldoc.Resolve(b); {
	case b != nil && b.Kind == yaml.MappingNode:
		bd := balancerDefaults
		s.Balancer = &bd
		sections = append(sections, section{"balancer", BalancerPresets, s.Balancer})
	case b != nil && b.Kind == yaml.SequenceNode:
		var ok bool
		if node, ok = l.decodeBalancerChain(yamldoc.Resolve(node), b, &s); !ok {
			return s, false
		}
	}
	_, m := yamldoc.Lookup(node, "middlebox")
	switch m = yamldoc.Resolve(m); {
	case m != nil && m.Kind == yaml.MappingNode:
		md := middleboxDefaults
		s.Middlebox = &md
		sections = append(sections, section{"middlebox", MiddleboxPresets, s.Middlebox})
	case m != nil && m.Kind == yaml.SequenceNode:
		var ok bool
		if node, ok = l.decodeMiddleboxChain(yamldoc.Resolve(node), m, &s); !ok {
			return s, false
		}
	}
	for _, sec := range sections {
		_, section := yamldoc.Lookup(node, sec.key)
		if _, p := yamldoc.Lookup(section, "preset"); p != nil {
			preset, ok := sec.reg[p.Value]
			if !ok {
				l.add(p, sec.key+".preset", "unknown preset %q (known: %s)", p.Value, strings.Join(PresetNames(sec.reg), ", "))
				return s, false
			}
			version := "" // client.version chooses among the releases a client preset models
			if _, v := yamldoc.Lookup(section, "version"); v != nil && sec.key == "client" {
				version = v.Value
			}
			if err := preset.DecodeVersion(version, sec.dst); err != nil {
				l.add(p, sec.key+".preset", "built-in preset %s: %v", p.Value, err)
				return s, false
			}
		}
	}
	if err := node.Decode(&s); err != nil {
		l.decodeError(node, err)
		return s, false
	}
	return s, true
}

// decodeError reports a failed decode of node at the positions the error carries.
func (l *loader) decodeError(node *yaml.Node, err error) {
	var te *yaml.TypeError
	var ne *yamldoc.NodeError
	if errors.As(err, &ne) {
		l.diags = append(l.diags, Diagnostic{File: l.file, Line: ne.Line, Col: ne.Col, Message: ne.Err.Error()})
	} else if errors.As(err, &te) {
		for _, msg := range te.Errors {
			l.add(nil, "", "%s", msg)
		}
	} else {
		l.add(node, "", "%v", err)
	}
}

// semantic checks what the schema cannot express.
func (l *loader) semantic(r *Run, node *yaml.Node) {
	at := func(path string) *yaml.Node {
		n := node
		for _, part := range strings.Split(path, ".") {
			next := child(n, part)
			if next == nil {
				return n
			}
			n = next
		}
		return n
	}
	where := ""
	if r.Variant != "default" {
		where = fmt.Sprintf(" (in variant %s)", r.Variant)
	}
	l.checkSchedule(r, at, where)
	l.checkDurations(r, at, where)
	l.checkBalancer(r, at, where)
	l.checkEnv(node, where)
	l.checkReplay(r, node, at, where)
	l.checkHTTP2Caps(r, at, where)
	l.checkEvents(r, at, where)
	l.checkGoAwayClient(r, at, where)
	l.checkHTTP3(r, at, where)
	l.checkChain(r, at, where)
	l.checkVersion(r.Settings.Client, at, where)
	if r.Settings.Client.Exec != nil {
		l.checkExec(r, node, at, where)
		return // implementation is ignored for an exec run
	}
	l.checkImplementation(r.Settings.Client, at, where)
}

// checkSchedule checks the load's fields against each other, and a response body against
// its status.
func (l *loader) checkSchedule(r *Run, at func(string) *yaml.Node, where string) {
	ld := r.Settings.Load
	if ld.Pause.Min > ld.Pause.Max {
		l.add(at("load.pause"), "load.pause", "the range starts above its end: %s > %s%s", ld.Pause.Min, ld.Pause.Max, where)
	}
	if ld.Burst > ld.Requests && ld.Replay == "" {
		l.add(at("load.burst"), "load.burst", "a burst of %d is more than the %d requests of the run%s", ld.Burst, ld.Requests, where)
	}
	if ld.Rate > 0 && ld.Burst > 0 {
		l.add(at("load.rate"), "load.rate", "rate (open model) and burst (closed model) cannot be combined%s", where)
	}
	if ld.Pause.Max > 0 && ld.Burst == 0 {
		l.add(at("load.pause"), "load.pause", "a pause needs a burst: set load.burst to the requests sent between pauses%s", where)
	}
	if resp := r.Settings.Server.Response; resp.BodyBytes > 0 && (resp.Status == 204 || resp.Status == 304) {
		l.add(at("server.response.body_bytes"), "server.response.body_bytes", "a %d response has no body; set body_bytes: 0%s", resp.Status, where)
	}
}

// checkDurations records where each duration of the run was set and checks that every one,
// once the variant and matrix are merged and the time scale applied, fits a time.Duration:
// otherwise it wraps negative at run time.
func (l *loader) checkDurations(r *Run, at func(string) *yaml.Node, where string) {
	r.durations = durationFields(r.Settings)
	for i := range r.durations {
		n := at(r.durations[i].path)
		r.durations[i].line, r.durations[i].col = n.Line, n.Column
	}
	if scale := r.Settings.TimeScale; scale > 0 {
		for _, d := range scaleProblems(r.durations, scale) {
			l.add(at(d.path), d.path, "%s", scaleMessage(d, scale, where))
		}
	}
}

// checkBalancer refuses what the balancer cannot carry: it is plain HTTP/1.1 on both sides,
// and refusing beats measuring something else.
func (l *loader) checkBalancer(r *Run, at func(string) *yaml.Node, where string) {
	if r.Settings.Balancer == nil {
		return
	}
	l.checkRealBalancers(r, at, where)
	if r.Settings.Server.TLS {
		l.add(at("server.tls"), "server.tls", "the balancer speaks plain HTTP/1.1 on both sides; set tls: false or remove the balancer section%s", where)
	}
	if r.Settings.Server.HTTP == "2" {
		l.add(at("server.http"), "server.http", "the balancer speaks plain HTTP/1.1 on both sides; set http: \"1.1\" or remove the balancer section%s", where)
	}
	if r.Settings.Client.Exec != nil {
		// A real client's connection truth comes from the server's stamps, which behind
		// a balancer name the backend connections, not the client's.
		l.add(at("client.exec"), "client.exec", "a real client behind the balancer is not supported yet (the server's connection stamps would name the balancer's connections); use a model client%s", where)
	}
}

// checkHTTP2Caps refuses a per-connection cap the embedded server cannot apply: over HTTP/2
// it sends no GOAWAY, so max_requests and close_every would silently close nothing (nginx's
// keepalive_requests sends one since 1.19.7; kalab's server does not yet).
func (l *loader) checkHTTP2Caps(r *Run, at func(string) *yaml.Node, where string) {
	s := r.Settings.Server
	if !modelH2(r) {
		return
	}
	for field, set := range map[string]bool{"max_requests": s.MaxRequests > 0, "close_every": s.CloseEvery > 0} {
		if set {
			l.add(at("server."+field), "server."+field, "over HTTP/2 the embedded server does not apply it: it sends no GOAWAY, so no connection would close; set server.http: \"1.1\" (or client.http2: never) to test it%s", where)
		}
	}
}

// checkImplementation refuses the model client's fields its implementation cannot honour.
func (l *loader) checkImplementation(c Client, at func(string) *yaml.Node, where string) {
	if c.Implementation == "go-net-http" {
		switch {
		case c.HonorHint:
			l.add(at("client.honor_hint"), "client.honor_hint", "Go's Transport does not read the Keep-Alive hint (golang/go#15508); use implementation: model%s", where)
		case c.Scheduling != "lifo":
			l.add(at("client.scheduling"), "client.scheduling", "Go's Transport always reuses the most recently used connection (lifo); %s needs implementation: model%s", c.Scheduling, where)
		}
	}
	if c.CallerYields && c.Scheduling != "creation-order" {
		l.add(at("client.caller_yields"), "client.caller_yields", "only scheduling creation-order gives a connection back a tick late; the other schedulings give it back at once%s", where)
	}
}

// checkVersion refuses a client.version nothing reads: no preset, a preset that models
// every release it names alike, or a real program (whose release is client.exec's version:
// client.version is the release a preset models).
func (l *loader) checkVersion(c Client, at func(string) *yaml.Node, where string) {
	if c.ProgramVersion == "" {
		return
	}
	if c.Exec != nil {
		l.add(at("client.version"), "client.version", "names the release a preset models; a real program's release is named in client.exec ({adapter: libcurl, version: 8.14.1}) by the adapters that can load another (go-http, node-fetch, libcurl)%s", where)
		return
	}
	var versioned []string
	for _, name := range PresetNames(ClientPresets) {
		if len(ClientPresets[name].Releases) > 0 {
			versioned = append(versioned, name)
		}
	}
	p, ok := ClientPresets[c.Preset]
	switch {
	case !ok:
		l.add(at("client.version"), "client.version", "names the release a preset models: set client.preset (%s)%s", strings.Join(versioned, ", "), where)
	case len(p.Releases) == 0:
		l.add(at("client.version"), "client.version", "the %s preset models every release it names alike (%s); client.version chooses among the releases of %s%s", p.Name, p.Models, strings.Join(versioned, ", "), where)
	case !p.InRange(c.ProgramVersion):
		// An unknown release would silently get the default's rule: refused instead.
		l.add(at("client.version"), "client.version", "%s is not a release the %s preset models: it models %s, and would give another release's rule to this one (kalab help presets)%s", c.ProgramVersion, p.Name, p.RangesText(), where)
	}
}

// checkCompare rejects compare expressions that name a variant the scenario does not have.
func (l *loader) checkCompare(sc *Scenario) {
	if len(sc.Runs) == 0 {
		return // the runs could not be worked out; that error is reported already
	}
	names := make(map[string]bool, len(sc.Runs))
	list := make([]string, 0, len(sc.Runs))
	for _, r := range sc.Runs {
		names[r.Variant] = true
		list = append(list, r.Variant)
	}
	for _, a := range sc.Compare {
		for _, ref := range a.Variants {
			if names[ref.Name] {
				continue
			}
			line, col := a.pos(ref.Offset)
			msg := fmt.Sprintf("no variant named %q", ref.Name)
			if s := suggest.Closest(ref.Name, list); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			} else {
				msg += fmt.Sprintf(" (variants: %s)", strings.Join(list, ", "))
			}
			l.diags = append(l.diags, Diagnostic{File: l.file, Line: line, Col: col, Path: "compare", Message: msg})
		}
	}
}

// FindFiles expands files and directories into scenario files (*.yaml, *.yml), sorted within
// each directory; a directory is searched recursively.
func FindFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, unwrapPath(err))
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != a && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if ext := filepath.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		sort.Strings(found)
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no scenario files (*.yaml, *.yml) found", a)
		}
		out = append(out, found...)
	}
	return out, nil
}

var reMatrixKey = regexp.MustCompile(`^(time_scale|clock|(network|server|client|balancer|middlebox|load)\.[a-z_]+(\.[a-z_]+)?)$`)
