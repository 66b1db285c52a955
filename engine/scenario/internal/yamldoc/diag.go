package yamldoc

import (
	"fmt"
	"sort"
	"strings"
)

// Diagnostic is one problem found in a scenario file, with its position.
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Path    string `json:"path,omitempty"` // dotted field path, e.g. client.idle_timeout
	Message string `json:"message"`
}

// String renders file:line:col: path: message.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", d.Line, max(d.Col, 1))
	}
	b.WriteString(": ")
	if d.Path != "" {
		p := d.Path
		if len(p) > 80 {
			p = p[:60] + "..." + p[len(p)-17:]
		}
		b.WriteString(p)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Diagnostics is every problem found while loading a scenario; it is the loader's error.
type Diagnostics []Diagnostic

// Error lists every diagnostic, one per line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Sorted orders the diagnostics by file, line and column, and says each problem once.
func (ds Diagnostics) Sorted() Diagnostics {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	// The same problem can be found twice (for example once per variant); say it once.
	out := ds[:0]
	seen := map[string]bool{}
	for _, d := range ds {
		if k := d.String(); !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}
