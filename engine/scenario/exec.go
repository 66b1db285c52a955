package scenario

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/adapter"
	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// Exec names a real client program for client.exec: a bundled adapter (written as its
// name, or as {adapter: NAME, version: V} to run another release of its library) or the
// user's own command ({command: [program, args...]}).
type Exec struct {
	Adapter string   `yaml:"adapter" json:"adapter,omitempty"`
	Version string   `yaml:"version" json:"version,omitempty"`
	Command []string `yaml:"command" json:"command,omitempty"`
	// Dir is the directory of the scenario file, where a command runs and a relative
	// program path is found.
	Dir string `yaml:"-" json:"-"`
	// Fields lists the client fields the file set for this run (not defaults, not a
	// preset's), as dotted paths: only these reach the program, the rest is its own.
	Fields []string `yaml:"-" json:"fields,omitempty"`
}

// UnmarshalYAML implements yaml.Unmarshaler: a name, or a mapping with command.
func (e *Exec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*e = Exec{Adapter: n.Value}
		return nil
	}
	type plain Exec
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*e = Exec(p)
	return nil
}

// ClientField returns a client field's value as a canonical string (what the adapters'
// Fixed values are written in) and as the exec plan carries it (durations in ms under
// <name>_ms). ok is false for a field that has no single value (headers, exec).
func (c Client) ClientField(path string) (key, canon string, plan any, ok bool) {
	durations := map[string]Duration{"idle_timeout": c.IdleTimeout, "hint_buffer": c.HintBuffer, "hint_max": c.HintMax, "timeout": c.Timeout}
	if d, isDur := durations[path]; isDur {
		return path + "_ms", d.String(), float64(d) / 1e6, true
	}
	b := func(v bool) (string, string, any, bool) { return path, strconv.FormatBool(v), v, true }
	i := func(v int) (string, string, any, bool) { return path, strconv.Itoa(v), v, true }
	s := func(v string) (string, string, any, bool) { return path, v, v, true }
	switch path {
	case "keepalive":
		return b(c.KeepAlive)
	case "honor_hint":
		return b(c.HonorHint)
	case "hint_parser":
		return s(c.HintParser)
	case "max_conns":
		return i(c.MaxConns)
	case "max_idle":
		return i(c.MaxIdle)
	case "scheduling":
		return s(c.Scheduling)
	case "caller_yields":
		return b(c.CallerYields)
	case "drop_empty_pool":
		return b(c.DropEmptyPool)
	case "liveness_check":
		return b(c.LivenessCheck)
	case "session_resumption":
		return b(c.SessionResumption)
	case "http2":
		return s(c.HTTP2)
	case "keepalive_header":
		return b(c.KeepAliveHeader)
	case "liveness_eof_only":
		return b(c.LivenessEOFOnly)
	case "version":
		return s(c.ProgramVersion)
	case "method":
		return s(c.Method)
	case "path":
		return s(c.Path)
	case "body_bytes":
		return i(c.BodyBytes)
	}
	if field, ok := strings.CutPrefix(path, "retry."); ok {
		return c.Retry.field(path, field)
	}
	return "", "", nil, false
}

// field is ClientField for a field of client.retry: path is its dotted path, name its
// name within retry.
func (r Retry) field(path, name string) (key, canon string, plan any, ok bool) {
	b := func(v bool) (string, string, any, bool) { return path, strconv.FormatBool(v), v, true }
	switch name {
	case "hidden":
		return b(r.Hidden)
	case "attempts":
		return path, strconv.Itoa(r.Attempts), r.Attempts, true
	case "idempotent_only":
		return b(r.IdempotentOnly)
	case "reused_only":
		return b(r.ReusedOnly)
	case "zero_bytes_only":
		return b(r.ZeroBytesOnly)
	case "on":
		return path, strings.Join(r.On, ","), r.On, true
	}
	return "", "", nil, false
}

// checkExec resolves client.exec for a run: the fields the file set, the command's
// directory, and every field or load shape the adapter cannot honour (a load error at
// the field, so nothing runs that would measure something else than what was asked).
func (l *loader) checkExec(r *Run, node *yaml.Node, at func(string) *yaml.Node, where string) {
	e := r.Settings.Client.Exec
	if e == nil {
		return
	}
	if dir, err := filepath.Abs(filepath.Dir(l.file)); err == nil {
		e.Dir = dir
	} else {
		e.Dir = filepath.Dir(l.file)
	}
	fields := clientFieldsSet(node)
	e.Fields = e.Fields[:0]
	for _, f := range fields {
		if f.path != "exec" {
			e.Fields = append(e.Fields, f.path)
		}
	}
	sort.Strings(e.Fields)
	ld := r.Settings.Load
	if ld.Rate > 0 {
		l.add(at("load.rate"), "load.rate", "an exec client runs the closed schedule (requests, concurrency, burst, pause); the open model (rate) is not part of the exec protocol%s", where)
	}
	if len(e.Command) > 0 && e.Adapter != "" {
		l.add(at("client.exec"), "client.exec", "give either a bundled adapter or a command, not both%s", where)
		return
	}
	l.checkExecVersion(e, at, where)
	if e.Adapter == "" {
		if len(e.Command) == 0 {
			l.add(at("client.exec"), "client.exec", "name a bundled adapter (%s) or give {command: [program, args...]}%s", strings.Join(adapter.Names(), ", "), where)
		}
		return // the user's program gets every field in the plan; it is theirs to honour
	}
	a, ok := adapter.Lookup(e.Adapter)
	if !ok {
		l.add(at("client.exec"), "client.exec", "unknown adapter %q (bundled: %s)%s", e.Adapter, strings.Join(adapter.Names(), ", "), where)
		return
	}
	for _, f := range fields {
		if f.path == "version" {
			continue // checkVersion says where a program's release goes
		}
		_, canon, _, _ := r.Settings.Client.ClientField(f.path)
		if why := a.Refuse(f.path, canon); why != "" {
			l.add(f.key, "client."+f.path, "%s%s", why, where)
		}
	}
	if a.Sequential && ld.Concurrency > 1 {
		l.add(at("load.concurrency"), "load.concurrency", "the %s adapter sends one request at a time (%s); concurrency %d cannot be honoured%s", a.Name, a.Models, ld.Concurrency, where)
	}
	if a.NoPause && ld.Pause.Max > 0 {
		l.add(at("load.pause"), "load.pause", "the %s adapter cannot pause between requests (%s); use curl-loop, or no pause%s", a.Name, a.Models, where)
	}
}

// checkExecVersion refuses client.exec's version where the program cannot take it: with a
// command, or an adapter that runs only its runtime's own release or not in that form.
func (l *loader) checkExecVersion(e *Exec, at func(string) *yaml.Node, where string) {
	if e.Version == "" {
		return
	}
	why := "a version goes with a bundled adapter ({adapter: go-http, version: go1.22.12}); your own command runs what it runs"
	if a, ok := adapter.Lookup(e.Adapter); ok {
		why = a.RefuseVersion(e.Version)
	} else if e.Adapter != "" || len(e.Command) == 0 {
		return // no program named, or an unknown one: said at client.exec
	}
	if why != "" {
		l.add(at("client.exec.version"), "client.exec.version", "%s%s", why, where)
	}
}

// fieldSet is a client field the file wrote, by dotted path, and its key.
type fieldSet struct {
	path string
	key  *yaml.Node
}

// clientFieldsSet lists the fields written in the merged client section, retry's one level
// down.
func clientFieldsSet(node *yaml.Node) []fieldSet {
	_, cl := yamldoc.Lookup(node, "client")
	cl = yamldoc.Resolve(cl)
	if cl == nil || cl.Kind != yaml.MappingNode {
		return nil
	}
	var fields []fieldSet
	for i := 0; i+1 < len(cl.Content); i += 2 {
		k, v := cl.Content[i], yamldoc.Resolve(cl.Content[i+1])
		if k.Value == "retry" && v != nil && v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				fields = append(fields, fieldSet{"retry." + v.Content[j].Value, v.Content[j]})
			}
			continue
		}
		fields = append(fields, fieldSet{k.Value, k})
	}
	return fields
}

// checkEnv refuses env: entries kalab sets itself (the KALAB_* protocol variables) and a
// name given twice; the schema has checked each entry's form.
func (l *loader) checkEnv(node *yaml.Node, where string) {
	_, list := yamldoc.Lookup(node, "env")
	list = yamldoc.Resolve(list)
	if list == nil || list.Kind != yaml.SequenceNode {
		return
	}
	seen := map[string]bool{}
	for _, item := range list.Content {
		name, _, _ := strings.Cut(item.Value, "=")
		switch {
		case strings.HasPrefix(strings.ToUpper(name), "KALAB_"):
			l.add(item, "env", "%s: KALAB_* variables are the exec protocol's, set by kalab itself%s", name, where)
		case seen[name]:
			l.add(item, "env", "%s is given twice%s", name, where)
		}
		seen[name] = true
	}
}
