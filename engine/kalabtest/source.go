package kalabtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// Source is a scenario to run: a file (File), YAML bytes (YAML), or one built in Go
// (Scenario). Each is loaded and checked as kalab run loads a file.
type Source interface {
	load() (*scenario.Plan, error)
}

// File is a scenario file; its problems are reported as file:line:col.
func File(path string) Source { return fileSource(path) }

// YAML is a scenario's YAML text; name stands for the file in messages (file:line:col)
// and relative paths in it (load.replay) are read from name's directory.
func YAML(name string, data []byte) Source { return yamlSource{name: name, data: data} }

type fileSource string

func (f fileSource) load() (*scenario.Plan, error) { return scenario.LoadFiles([]string{string(f)}) }

type yamlSource struct {
	name string
	data []byte
}

func (y yamlSource) load() (*scenario.Plan, error) { return parse(y.name, y.data) }

// parse loads one scenario from its bytes.
func parse(name string, data []byte) (*scenario.Plan, error) {
	if len(data) > scenario.MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d KiB; a scenario is a few kilobytes of YAML", name, scenario.MaxFileSize>>10)
	}
	s, diags := scenario.Parse(name, data)
	if len(diags) > 0 {
		return nil, diags.Sorted()
	}
	return &scenario.Plan{Scenarios: []*scenario.Scenario{s.Scenario}}, nil
}

// Scenario is a scenario built in Go, for a table-driven test: the fields most tests set
// are typed, and Set reaches any other field of the scenario format by its dotted path
// (docs/scenarios.md). It is checked as a file is; a problem is reported by its field path
// (kalabtest.Scenario(name): server.idle_timeout: ...).
type Scenario struct {
	Name string
	// RTT is network.rtt: each direction of the link is delayed by half of it.
	RTT    time.Duration
	Server Server
	// Method is client.method (default GET). Of the file's client section only method,
	// path, headers and timeout apply to your client.
	Method string
	Load   Load
	// Set sets any other field by its dotted path: {"client.timeout": 2 * time.Second,
	// "server.max_requests": 100}. A time.Duration is written as Go writes it.
	Set map[string]any
	// Expect are the checks every run must pass ("errors == 0"; docs/assertions.md).
	Expect []string
	// Variants are runs of their own, each the scenario with its own fields set.
	Variants []Variant
	// Compare are checks across the variants ("variant('post').errors > 0").
	Compare []string
}

// Server is the embedded server's behaviour (server.*).
type Server struct {
	TLS bool
	// HTTP2 makes the server speak HTTP/2 (h2 by ALPN with TLS).
	HTTP2 bool
	// IdleTimeout is how long the server keeps an idle connection; 0 leaves the default.
	IdleTimeout time.Duration
	// KeepaliveHint sends a Keep-Alive: timeout=N header (Go's Transport ignores it).
	KeepaliveHint bool
}

// Load is the request schedule (load.*).
type Load struct {
	Requests    int
	Concurrency int
	// Burst requests, then a pause; 0: no bursts.
	Burst int
	// Pause after each burst; with PauseMax, a pause drawn from Pause..PauseMax with Seed.
	Pause, PauseMax time.Duration
	Seed            int64
}

// Variant is one run of a Scenario: its name, the fields it sets over the scenario's
// (dotted paths, as Scenario.Set) and its own checks.
type Variant struct {
	Name   string
	Method string
	Set    map[string]any
	Expect []string
}

// YAML is the scenario in kalab's file format, as kalab run would read it: to keep a case
// as a file, or to see what a Go value sets.
func (s Scenario) YAML() ([]byte, error) {
	doc, err := s.document()
	if err != nil {
		return nil, fmt.Errorf("kalabtest.Scenario(%s): %w", s.Name, err)
	}
	return yaml.Marshal(doc)
}

func (s Scenario) load() (*scenario.Plan, error) {
	name := "kalabtest.Scenario(" + s.Name + ")"
	data, err := s.YAML()
	if err != nil {
		return nil, err
	}
	plan, err := parse(name, data)
	if ds, ok := err.(scenario.Diagnostics); ok {
		// Lines and columns are the generated YAML's: the field path says where.
		for i := range ds {
			ds[i].Line, ds[i].Col = 0, 0
		}
		return nil, ds
	}
	if err != nil {
		return nil, err
	}
	for _, sc := range plan.Scenarios {
		for _, r := range sc.Runs {
			unplace(r.Expect)
		}
		unplace(sc.Compare)
	}
	return plan, nil
}

// unplace drops the generated YAML's positions from assertions.
func unplace(as []scenario.Assertion) {
	for i := range as {
		as[i].Line, as[i].Col = 0, 0
	}
}

// document is the scenario as the nested map its YAML is written from.
func (s Scenario) document() (map[string]any, error) {
	doc := map[string]any{"name": s.Name}
	set := map[string]any{}
	if s.RTT > 0 {
		set["network.rtt"] = s.RTT
	}
	set["server.tls"] = s.Server.TLS
	set["server.keepalive_hint"] = s.Server.KeepaliveHint
	if s.Server.HTTP2 {
		set["server.http"] = "2"
	}
	if s.Server.IdleTimeout > 0 {
		set["server.idle_timeout"] = s.Server.IdleTimeout
	}
	if s.Method != "" {
		set["client.method"] = s.Method
	}
	s.Load.into(set)
	maps.Copy(set, s.Set)
	if err := setPaths(doc, set); err != nil {
		return nil, err
	}
	if len(s.Expect) > 0 {
		doc["expect"] = s.Expect
	}
	if len(s.Compare) > 0 {
		doc["compare"] = s.Compare
	}
	var vs []any
	for _, v := range s.Variants {
		vd := map[string]any{"name": v.Name}
		vset := maps.Clone(v.Set)
		if vset == nil {
			vset = map[string]any{}
		}
		if v.Method != "" {
			vset["client.method"] = v.Method
		}
		if err := setPaths(vd, vset); err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		if len(v.Expect) > 0 {
			vd["expect"] = v.Expect
		}
		vs = append(vs, vd)
	}
	if len(vs) > 0 {
		doc["variants"] = vs
	}
	return doc, nil
}

func (l Load) into(set map[string]any) {
	if l.Requests > 0 {
		set["load.requests"] = l.Requests
	}
	if l.Concurrency > 0 {
		set["load.concurrency"] = l.Concurrency
	}
	if l.Burst > 0 {
		set["load.burst"] = l.Burst
	}
	switch {
	case l.PauseMax > 0:
		set["load.pause"] = l.Pause.String() + ".." + l.PauseMax.String()
	case l.Pause > 0:
		set["load.pause"] = l.Pause
	}
	if l.Seed != 0 {
		set["load.seed"] = l.Seed
	}
}

// setPaths writes each dotted path's value into doc, in path order.
func setPaths(doc map[string]any, set map[string]any) error {
	for _, path := range slices.Sorted(maps.Keys(set)) {
		v := set[path]
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		parts := strings.Split(path, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				if _, taken := m[p]; taken {
					return fmt.Errorf("%s: %s is set to a value, not a section", path, p)
				}
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	return nil
}
