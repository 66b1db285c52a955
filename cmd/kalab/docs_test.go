package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/help"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/schema"
)

var update = flag.Bool("update", false, "rewrite the generated pages of docs/reference (review the diff)")

// scenariosPage holds the hand-written table of scenario fields.
const scenariosPage = "../../docs/scenarios.md"

// TestMetricDocs keeps the one description of each metric (engine/check/docs.go) in step
// with the Metrics struct and the result schema; `kalab help metrics` and
// docs/reference/metrics.md (TestDocs) print the same table, so all agree when this passes. Each failure says what to change.
func TestMetricDocs(t *testing.T) {
	for _, p := range check.DocsProblems() {
		t.Error(p)
	}

	// The result schema: one property per metric, each described as Docs says.
	var rs struct {
		Defs struct {
			Metrics schemaObject `json:"metrics"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(schema.Result, &rs); err != nil {
		t.Fatal(err)
	}
	inSchema := map[string]string{}
	rs.Defs.Metrics.flatten("", inSchema)
	for _, d := range check.Docs {
		got, ok := inSchema[d.Name]
		switch {
		case !ok:
			t.Errorf("schema/result.schema.json: $defs.metrics has no property %s; add it with \"description\": %q", d.Name, d.SchemaDescription())
		case got != d.SchemaDescription():
			t.Errorf("schema/result.schema.json: metric %s: \"description\" is %q; want %q (from engine/check/docs.go)", d.Name, got, d.SchemaDescription())
		}
	}
	for name := range inSchema {
		if !check.IsName(name) {
			t.Errorf("schema/result.schema.json: $defs.metrics has %s, which is no metric of check.Metrics", name)
		}
	}
}

// TestREADMEFieldTable checks that the manual's table of scenario fields names every field
// of schema/scenario.schema.json, so a new field cannot go undocumented there.
func TestREADMEFieldTable(t *testing.T) {
	var ss struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]schemaObject    `json:"$defs"`
	}
	if err := json.Unmarshal(schema.Scenario, &ss); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(scenariosPage)
	if err != nil {
		t.Fatal(err)
	}
	row := func(section string) string {
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(section) + ` \|.*$`).FindString(string(b))
		if m == "" {
			t.Errorf("docs/scenarios.md: no row for %s in the table of fields", section)
		}
		return m
	}
	top := row("top level")
	for _, f := range slices.Sorted(maps.Keys(ss.Properties)) {
		if !strings.Contains(top, "`"+f+"`") {
			t.Errorf("docs/scenarios.md: the fields table's top-level row lacks `%s`", f)
		}
	}
	for _, sec := range []string{"network", "server", "client", "load"} {
		r := row("`" + sec + "`")
		for _, f := range slices.Sorted(maps.Keys(ss.Defs[sec].Properties)) {
			if !strings.Contains(r, "`"+f) {
				t.Errorf("docs/scenarios.md: the fields table's %s row lacks `%s`", sec, f)
			}
			for sub := range ss.Defs[sec].Properties[f].Properties {
				if !regexp.MustCompile(`\b` + sub + `\b`).MatchString(r) {
					t.Errorf("docs/scenarios.md: the fields table's %s row lacks %s.%s", sec, f, sub)
				}
			}
		}
	}
}

// schemaObject is the part of a JSON Schema object these tests read.
type schemaObject struct {
	Description string                  `json:"description"`
	Properties  map[string]schemaObject `json:"properties"`
}

// flatten records the description of every leaf property under its dotted name.
func (o schemaObject) flatten(prefix string, out map[string]string) {
	for name, p := range o.Properties {
		if prefix != "" {
			name = prefix + "." + name
		}
		if len(p.Properties) > 0 {
			p.flatten(name, out)
			continue
		}
		out[name] = p.Description
	}
}

// TestUsageAligned: in `kalab help`, every command's description starts in the same column,
// and so do the lines that continue one.
func TestUsageAligned(t *testing.T) {
	col := -1
	for _, line := range strings.Split(usage, "\n") {
		var at int
		switch {
		case strings.HasPrefix(line, "  kalab "):
			// The description starts after the first run of two or more spaces past the command.
			i := strings.Index(line[2:], "  ")
			if i < 0 {
				t.Errorf("no description on %q", line)
				continue
			}
			at = 2 + i + len(line[2+i:]) - len(strings.TrimLeft(line[2+i:], " "))
		case strings.HasPrefix(line, "        ") && strings.TrimSpace(line) != "":
			at = len(line) - len(strings.TrimLeft(line, " "))
		default:
			continue
		}
		if col < 0 {
			col = at
		}
		if at != col {
			t.Errorf("description at column %d, want %d: %q", at, col, line)
		}
	}
	if col < 0 {
		t.Fatal("no command lines in the usage text")
	}
}

// `kalab help presets` names, for every preset, what it models and whether a truth file
// checked it: "verified against PROGRAM on DATE by scenarios/truth/FILE" or "not verified",
// and one line per version verified.
func TestHelpPresetsSaysWhatEachWasVerifiedAgainst(t *testing.T) {
	var out, errb strings.Builder
	if code := Main([]string{"help", "presets"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	blocks := strings.Split(out.String(), "\n\n")
	verified := regexp.MustCompile(`(?m)^    verified against .+ on \d{4}-\d{2}-\d{2} by scenarios/truth/[a-z0-9.-]+\.yaml$`)
	for _, reg := range []map[string]*scenario.Preset{scenario.ServerPresets, scenario.ClientPresets, scenario.BalancerPresets, scenario.MiddleboxPresets} {
		for name, p := range reg {
			i := slices.IndexFunc(blocks, func(b string) bool {
				return strings.HasPrefix(strings.TrimLeft(b, "\n"), "  "+name+": "+p.Models+"\n")
			})
			if i < 0 {
				t.Errorf("%s: no block starting %q", name, "  "+name+": "+p.Models)
				continue
			}
			b := blocks[i]
			switch {
			case p.Verified != "" && !verified.MatchString(b):
				t.Errorf("%s: verified by %q, but the help does not say against what, when and by which truth file:\n%s", name, p.Verified, b)
			case p.Verified == "" && !strings.Contains(b, "\n    not verified"):
				t.Errorf("%s: not verified, but the help does not say so:\n%s", name, b)
			}
			for _, c := range p.Checked {
				if line := fmt.Sprintf("\n    version verified: %s %s on %s by %s\n", c.Program, c.Version, c.On, c.By); !strings.Contains(b, line) {
					t.Errorf("%s: verified against %s %s, but the help has no line %q:\n%s", name, c.Program, c.Version, strings.TrimSpace(line), b)
				}
			}
		}
	}
}

// TestTimingHelp keeps `kalab help metrics`'s account of the run record's timing in step
// with the result schema: every field of timing is named there.
func TestTimingHelp(t *testing.T) {
	var doc any
	if err := json.Unmarshal(schema.Result, &doc); err != nil {
		t.Fatal(err)
	}
	var fields []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if tm, ok := x["timing"].(map[string]any); ok {
				if props, ok := tm["properties"].(map[string]any); ok {
					fields = slices.Sorted(maps.Keys(props))
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	if len(fields) == 0 {
		t.Fatal("schema/result.schema.json has no timing object with properties")
	}
	for _, f := range fields {
		if !strings.Contains(help.Timing, f) {
			t.Errorf("kalab help metrics does not name timing.%s (cmd/kalab/internal/help Timing)", f)
		}
	}
}
