// Package findings writes the figures the README and the manual quote of the bundled suite
// from the committed results: each page's section is a template (templates/) whose cells
// read results/baseline.jsonl, so a figure changes only with the baseline, and Stale says
// where a page no longer says what the baseline does.
package findings

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// Command regenerates every generated section; Stale's messages name it.
const Command = "go test ./engine/internal/findings -update"

// The committed results the templates read, relative to the module's root.
const (
	BaselineFile   = "results/baseline.jsonl"
	ClocksRealFile = "results/clocks-real.jsonl"
)

//go:embed templates/*.tmpl
var templates embed.FS

// Section is one generated section of a page: from its heading line to the next heading of
// the same level or higher (or the end of the page).
type Section struct {
	File     string // the page, relative to the module's root
	Template string // the template's name in templates/
}

// Sections lists every generated section.
var Sections = []Section{
	{"README.md", "readme.md.tmpl"},
	{"docs/findings.md", "findings.md.tmpl"},
	{"docs/clocks.md", "clocks.md.tmpl"},
}

// Render is the section's text as its template writes it from the results under root.
func (s Section) Render(root string) (string, error) {
	d, err := load(root)
	if err != nil {
		return "", err
	}
	return s.render(d)
}

func (s Section) render(d *data) (string, error) {
	src, err := templates.ReadFile("templates/" + s.Template)
	if err != nil {
		return "", err
	}
	t, err := template.New(s.Template).Option("missingkey=error").Funcs(d.funcs()).Parse(string(src))
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Drift is a generated section that differs from what its template renders.
type Drift struct {
	Section Section
	Line    int    // the page's first line that differs, from 1
	Have    string // that line as the page has it ("" past the section's end)
	Want    string // as the template renders it
}

func (d Drift) Error() string {
	return fmt.Sprintf("%s:%d is not what templates/%s renders from %s:\n  have: %s\n  want: %s\nedit the template (engine/internal/findings/templates/), not the page, then run `%s` and review the diff",
		d.Section.File, d.Line, d.Section.Template, BaselineFile, d.Have, d.Want, Command)
}

// Stale renders every section from the results under root and returns each that its page
// does not hold as rendered.
func Stale(root string) ([]Drift, error) {
	d, err := load(root)
	if err != nil {
		return nil, err
	}
	var out []Drift
	for _, s := range Sections {
		want, err := s.render(d)
		if err != nil {
			return nil, fmt.Errorf("templates/%s: %w", s.Template, err)
		}
		page, err := os.ReadFile(filepath.Join(root, s.File))
		if err != nil {
			return nil, err
		}
		start, have, err := section(string(page), want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		if have != want {
			line, h, w := firstDiff(have, want)
			out = append(out, Drift{Section: s, Line: start + line, Have: h, Want: w})
		}
	}
	return out, nil
}

// Write rewrites every section that differs from what its template renders, and returns
// the pages it changed.
func Write(root string) ([]string, error) {
	d, err := load(root)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, s := range Sections {
		want, err := s.render(d)
		if err != nil {
			return nil, fmt.Errorf("templates/%s: %w", s.Template, err)
		}
		path := filepath.Join(root, s.File)
		page, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text := string(page)
		start, have, err := section(text, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		if have == want {
			continue
		}
		lines := strings.SplitAfter(text, "\n")
		before := strings.Join(lines[:start-1], "")
		after := strings.TrimPrefix(text[len(before):], have)
		if err := os.WriteFile(path, []byte(before+want+after), 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, s.File)
	}
	return changed, nil
}

// section finds in page the section whose heading is rendered's first line: it returns the
// heading's line number (from 1) and the section's text, up to the next heading of the
// same level or higher.
func section(page, rendered string) (int, string, error) {
	heading, _, _ := strings.Cut(rendered, "\n")
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	if level < 1 || heading[level] != ' ' {
		return 0, "", fmt.Errorf("the template does not start with a heading: %q", heading)
	}
	lines := strings.SplitAfter(page, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimRight(l, "\n") == heading {
			start = i
			break
		}
	}
	if start < 0 {
		return 0, "", fmt.Errorf("no heading %q to generate", heading)
	}
	end := len(lines)
	fence := false
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			fence = !fence
		}
		if !fence && isHeading(lines[i], level) {
			end = i
			break
		}
	}
	return start + 1, strings.Join(lines[start:end], ""), nil
}

// isHeading reports whether l is a heading of level or higher (fewer #).
func isHeading(l string, level int) bool {
	n := strings.IndexFunc(l, func(r rune) bool { return r != '#' })
	return n >= 1 && n <= level && l[n] == ' '
}

// firstDiff returns the index (from 0) of the first line where have and want differ, and
// the two lines.
func firstDiff(have, want string) (int, string, string) {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := 0; ; i++ {
		var a, b string
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b || i >= len(h) || i >= len(w) {
			return i, a, b
		}
	}
}
