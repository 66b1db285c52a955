package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// numeric are the built-ins an assertion may call: the metrics are numbers, and these take
// and give numbers without building anything whose size a value decides.
var numeric = []string{"abs", "ceil", "float", "floor", "int", "max", "mean", "median", "min", "round"}

// boundedVisitor finds the first construct whose memory a value, not the expression's text,
// decides: a range (A..B holds every integer between), repeat(), the list and string
// built-ins, and predicates that walk a list (map, filter, all, ...). expr's VM stops such an
// expression at its memory budget only when it runs, after the runs it judges; some
// (repeat of a repeat, replace) allocate before the budget is counted.
type boundedVisitor struct{ err *Error }

func (v *boundedVisitor) Visit(node *ast.Node) {
	if v.err != nil {
		return
	}
	refuse := func(format string, args ...any) {
		v.err = &Error{Offset: (*node).Location().From, Message: fmt.Sprintf(format, args...)}
	}
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator == ".." {
			refuse("a range (A..B) builds a list of every integer between its ends, which an assertion never needs; compare the number instead, e.g. x >= A && x <= B")
		}
	case *ast.BuiltinNode:
		if !slices.Contains(numeric, n.Name) {
			refuse("%s() is not available in an assertion: the metrics are numbers, and the built-ins that take them are %s()", n.Name, strings.Join(numeric, "(), "))
		}
	case *ast.PredicateNode, *ast.PointerNode:
		refuse("a predicate (# or a {...} closure) walks a list, and the metrics are numbers; compare them directly")
	}
}

// bounded refuses an expression whose memory a value could decide (boundedVisitor).
func bounded(n ast.Node) error {
	v := &boundedVisitor{}
	ast.Walk(&n, v)
	if v.err != nil {
		return v.err
	}
	return nil
}
