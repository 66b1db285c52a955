package report

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/schema"
)

// Every reason the model client names for a close it decided (engine/client/reasons.go) is
// one the result schema allows, wherever the schema lists close reasons: a new reason
// without its schema entry made every record that carried it invalid, and the baseline with
// them.
func TestClientCloseReasonsInTheSchema(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../client/reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && strings.HasPrefix(vs.Names[0].Name, "Reason") {
			v, err := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			reasons = append(reasons, v)
		}
		return true
	})
	if len(reasons) < 8 {
		t.Fatalf("read %d reasons from engine/client/reasons.go", len(reasons))
	}
	var enums [][]string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x["enum"].([]any); ok && slices.Contains(e, any("too_many_idle")) {
				var list []string
				for _, s := range e {
					list = append(list, s.(string))
				}
				enums = append(enums, list)
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
	var doc any
	if err := json.Unmarshal(schema.Result, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	if len(enums) < 4 {
		t.Fatalf("found %d lists of close reasons in the schema", len(enums))
	}
	for i, e := range enums {
		for _, r := range reasons {
			if !slices.Contains(e, r) {
				t.Errorf("the schema's list %d of close reasons lacks %q", i, r)
			}
		}
	}
}
