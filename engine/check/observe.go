package check

import (
	"fmt"
	"sort"

	"github.com/expr-lang/expr/ast"
)

// Ref is one metric an assertion reads: Variant is empty in an expect assertion.
type Ref struct {
	Variant string
	Metric  string
}

// Key is how the reference is written in results: "errors" or "variant('a').errors".
func (r Ref) Key() string {
	if r.Variant == "" {
		return r.Metric
	}
	return fmt.Sprintf("variant('%s').%s", r.Variant, r.Metric)
}

// refs lists the metrics an expression reads, in a stable order, so a result can show the
// observed values beside the verdict. variant() calls with a computed name are not listed.
func refs(root ast.Node) []Ref {
	v := &metricVisitor{seen: map[Ref]bool{}}
	ast.Walk(&root, v)
	sort.Slice(v.out, func(i, j int) bool { return v.out[i].Key() < v.out[j].Key() })
	return v.out
}

type metricVisitor struct {
	seen map[Ref]bool
	out  []Ref
}

func (v *metricVisitor) Visit(node *ast.Node) {
	if r, ok := refOf(*node); ok && IsName(r.Metric) && !v.seen[r] {
		v.seen[r] = true
		v.out = append(v.out, r)
	}
}

func refOf(n ast.Node) (Ref, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return Ref{Metric: n.Value}, true
	case *ast.ChainNode:
		return refOf(n.Node)
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || id.Value != "variant" || len(n.Arguments) != 1 {
			return Ref{}, false
		}
		s, ok := n.Arguments[0].(*ast.StringNode)
		if !ok {
			return Ref{}, false
		}
		return Ref{Variant: s.Value}, true
	case *ast.MemberNode:
		prop, ok := n.Property.(*ast.StringNode)
		if !ok {
			return Ref{}, false
		}
		base, ok := refOf(n.Node)
		if !ok {
			return Ref{}, false
		}
		if base.Metric == "" {
			base.Metric = prop.Value
		} else {
			base.Metric += "." + prop.Value
		}
		return base, true
	}
	return Ref{}, false
}

// Result is the outcome of one assertion.
type Result struct {
	Pass     bool
	Observed map[string]float64 // each metric the expression reads, by Ref.Key
	Err      error              // evaluation failed (the check counts as failed)
}

// Check evaluates an expect assertion and records the values it read.
func (a *Assertion) Check(m Metrics) Result {
	ok, err := a.Eval(m)
	flat := m.Flat()
	obs := make(map[string]float64, len(a.refs))
	for _, r := range a.refs {
		obs[r.Key()] = flat[r.Metric]
	}
	return Result{Pass: ok && err == nil, Observed: obs, Err: err}
}

// CheckCompare evaluates a compare assertion and records the values it read; reach
// answers plan_reaches (nil: a call to it is an error).
func (a *Assertion) CheckCompare(lookup func(name string) (Metrics, bool), reach Reacher) Result {
	ok, err := a.EvalCompareReach(lookup, reach)
	obs := make(map[string]float64, len(a.refs))
	for _, r := range a.refs {
		if m, found := lookup(r.Variant); found {
			obs[r.Key()] = m.Flat()[r.Metric]
		}
	}
	return Result{Pass: ok && err == nil, Observed: obs, Err: err}
}
