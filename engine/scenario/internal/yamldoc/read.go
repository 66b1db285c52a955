package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Read parses a scenario file's bytes into its top-level mapping: one YAML document of valid
// UTF-8 without control characters. When it cannot, it returns nil and the one problem that
// stops it, at its position.
func Read(file string, data []byte) (*yaml.Node, Diagnostics) {
	if !utf8.Valid(data) {
		line, col := invalidUTF8(data)
		return nil, Diagnostics{{File: file, Line: line, Col: col, Message: "the file is not valid UTF-8"}}
	}
	if line, col, ok := controlChar(data); ok {
		return nil, Diagnostics{{File: file, Line: line, Col: col, Message: "control characters are not allowed (only tab, newline and carriage return)"}}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Diagnostics{{File: file, Line: 1, Col: 1, Message: "the file is empty: a scenario needs at least a name"}}
		}
		return nil, Diagnostics{yamlError(file, data, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Diagnostics{{File: file, Line: extra.Line, Col: extra.Column, Message: "a scenario file holds one YAML document; found a second after ---"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, Diagnostics{yamlError(file, data, err)}
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null") {
		return nil, Diagnostics{{File: file, Line: 1, Col: 1, Message: "the file has no content: a scenario needs at least a name"}}
	}
	root := Resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, Diagnostics{{File: file, Line: root.Line, Col: root.Column, Message: fmt.Sprintf("the top level must be a mapping of fields (name: ..., client: ...), found a %s", kindName(root))}}
	}
	return root, nil
}

// ScalarPos maps a byte offset in an expression to a file position. Exact for single-line
// scalars (plain or quoted); multi-line scalars point at the scalar.
func ScalarPos(item *yaml.Node, offset int) (int, int) {
	switch item.Style {
	case 0:
		if !strings.Contains(item.Value, "\n") {
			return item.Line, item.Column + utf8.RuneCountInString(item.Value[:offset])
		}
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		if !strings.Contains(item.Value, "\n") && !strings.ContainsAny(item.Value, `'"\`) {
			return item.Line, item.Column + 1 + utf8.RuneCountInString(item.Value[:offset])
		}
	}
	return item.Line, item.Column
}

var reYAMLLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns a yaml.v3 syntax error into a diagnostic. yaml.v3 reports the line only;
// the column points at the first offending character where it can be found, else 1.
func yamlError(file string, data []byte, err error) Diagnostic {
	msg := err.Error()
	d := Diagnostic{File: file, Line: 1, Col: 1, Message: strings.TrimPrefix(msg, "yaml: ")}
	if m := reYAMLLine.FindStringSubmatch(msg); m != nil {
		d.Line, _ = strconv.Atoi(m[1])
		d.Message = m[2]
	}
	lines := strings.Split(string(data), "\n")
	if d.Line >= 1 && d.Line <= len(lines) {
		text := lines[d.Line-1]
		if i := strings.IndexByte(text, '\t'); i >= 0 && strings.TrimLeft(text[:i], " ") == "" {
			d.Col = i + 1
			d.Message = "a tab is used for indentation; YAML indents with spaces only"
		} else if strings.Contains(d.Message, "cannot start any token") {
			if i := strings.IndexFunc(text, func(r rune) bool { return r == '\t' || r == '@' || r == '`' }); i >= 0 {
				d.Col = utf8.RuneCountInString(text[:i]) + 1
			}
		}
	}
	return d
}

// invalidUTF8 finds the line and column of the first byte that is not UTF-8.
func invalidUTF8(data []byte) (int, int) {
	line, col := 1, 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		data = data[size:]
	}
	return line, col
}

// controlChar finds the first control character YAML forbids.
func controlChar(data []byte) (line, col int, found bool) {
	line, col = 1, 1
	for _, r := range string(data) {
		switch {
		case r == '\n':
			line, col = line+1, 1
			continue
		case r == '\t' || r == '\r' || r == 0xFEFF:
		case r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0):
			return line, col, true
		}
		col++
	}
	return 0, 0, false
}

// NodeError is a decoding error at a YAML node; the loader reports it at the node's line
// and column (yaml.v3 passes a custom unmarshaler's error through unchanged).
type NodeError struct {
	Line, Col int
	Err       error
}

func (e *NodeError) Error() string { return e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// At places err at n; nil stays nil.
func At(n *yaml.Node, err error) error {
	if err == nil {
		return nil
	}
	return &NodeError{Line: n.Line, Col: n.Column, Err: err}
}
