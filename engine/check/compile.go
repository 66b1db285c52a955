package check

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/kalab-dev/kalab/engine/internal/suggest"
)

// Kind says where an assertion appears, which decides what it can see.
type Kind int

const (
	// Expect assertions see one run's metrics by name: "errors == 0".
	Expect Kind = iota
	// Compare assertions see the runs of one scenario through variant('name').
	Compare
)

// CompareEnv is what a compare expression sees.
type CompareEnv struct {
	// Variant returns the metrics of the scenario's run with that name.
	Variant func(name string) (Metrics, error) `expr:"variant"`
	// PlanReaches reports whether the counts of run (errors, connections,
	// failed_bursts_mask) are among the outcomes the plan of rules reaches when each idle
	// gap may stretch by what run itself measured (engine/oracle Reach).
	PlanReaches func(rules, run string) (bool, error) `expr:"plan_reaches"`
}

// Reacher answers plan_reaches(rules, run) for a compare; the runner provides it.
type Reacher func(rules, run string) (bool, error)

// Assertion is a compiled expect or compare expression.
type Assertion struct {
	Source string
	Kind   Kind
	// Variants are the literal names passed to variant(...) and plan_reaches(...), with
	// their byte offsets in Source, so the loader can reject a name that no run has.
	Variants []VariantRef
	// Reached are the runs whose counts a plan_reaches(rules, run) call weighs (its second
	// name): such a run keeps what Reach needs of its timing (report.Slack).
	Reached []string
	program *vm.Program
	refs    []Ref
}

// VariantRef is one variant('name') call with a literal name.
type VariantRef struct {
	Name   string
	Offset int
}

// Error is a compile error at a byte offset in the expression source.
type Error struct {
	Offset  int
	Message string
}

func (e *Error) Error() string { return e.Message }

var unknownName = regexp.MustCompile(`^unknown name ([A-Za-z_][A-Za-z0-9_]*)`)
var noField = regexp.MustCompile(`^type check\.(\w+) has no field ([A-Za-z_][A-Za-z0-9_]*)`)

// Compile parses and type-checks src. Every metric name is checked against the vocabulary, and
// the expression must yield a boolean.
func Compile(src string, kind Kind) (*Assertion, error) {
	opts := []expr.Option{expr.AsBool()}
	if kind == Compare {
		opts = append(opts, expr.Env(CompareEnv{}))
	} else {
		opts = append(opts, expr.Env(Metrics{}))
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, convertError(src, kind, err)
	}
	if err := bounded(prog.Node()); err != nil {
		return nil, err
	}
	a := &Assertion{Source: src, Kind: kind, program: prog, refs: refs(prog.Node())}
	if kind == Compare {
		v, err := variantRefs(prog.Node())
		if err != nil {
			return nil, err
		}
		a.Variants, a.Reached = v.refs, v.reached
		for _, run := range v.reached {
			for _, m := range reachReads {
				a.refs = appendRef(a.refs, Ref{Variant: run, Metric: m})
			}
		}
	}
	return a, nil
}

func convertError(src string, kind Kind, err error) error {
	var fe *file.Error
	msg, offset := err.Error(), 0
	if errors.As(err, &fe) {
		msg, offset = fe.Message, offsetOf(src, fe.Line, fe.Column)
	}
	if m := unknownName.FindStringSubmatch(msg); m != nil {
		if kind == Compare {
			msg = fmt.Sprintf("unknown name %q: a compare expression reads metrics through variant('name'), e.g. variant('a').errors", m[1])
		} else {
			msg = fmt.Sprintf("unknown metric %q%s", m[1], hint(m[1]))
		}
	} else if m := noField.FindStringSubmatch(msg); m != nil {
		group := map[string]string{"Latency": "latency_ms", "ErrorsByClass": "errors_by_class", "Metrics": ""}[m[1]]
		name := m[2]
		if group != "" {
			name = group + "." + name
		}
		msg = fmt.Sprintf("unknown metric %q%s", name, hint(name))
	} else if strings.HasSuffix(msg, "arguments to call plan_reaches") {
		msg = planReachesArgs
	} else if strings.HasPrefix(msg, "expected bool") {
		msg = "the expression must be true or false, e.g. errors == 0 (" + msg + ")"
	} else if d := durationAt(src, msg); d != nil {
		msg, offset = d.Message, d.Offset
	} else if msg == `unexpected token Operator("=")` && offset < len(src) && src[offset] == '=' {
		msg = fmt.Sprintf("= is not a comparison; use == (%s)", src[:offset]+"=="+src[offset+1:])
	}
	return &Error{Offset: offset, Message: msg}
}

// durationLiteral is a number with a duration unit, "100ms" or "1.5 s".
var durationLiteral = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|m|h)\b`)

// durationAt explains a parse error that a duration written into an expression caused:
// expressions compare plain numbers, and the _ms metrics are milliseconds, so the fix is
// the same figure in milliseconds.
func durationAt(src, msg string) *Error {
	if !strings.HasPrefix(msg, "bad number syntax") && !strings.HasPrefix(msg, `unexpected token Identifier(`) {
		return nil
	}
	m := durationLiteral.FindStringSubmatchIndex(src)
	if m == nil {
		return nil
	}
	lit := src[m[0]:m[1]]
	d, err := time.ParseDuration(src[m[2]:m[3]] + src[m[4]:m[5]])
	if err != nil {
		return nil
	}
	ms := strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
	return &Error{Offset: m[0], Message: fmt.Sprintf(
		"%q: expressions take plain numbers, not durations; the _ms metrics are milliseconds of scenario time, so write %s", lit, ms)}
}

// offsetOf turns expr's line (1-based) and column (0-based) into a byte offset.
func offsetOf(src string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(src[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	off += col
	if off < 0 {
		return 0
	}
	if off > len(src) {
		return len(src)
	}
	return off
}

// hint names the closest metric, when one is close enough to be a likely typo.
func hint(name string) string {
	if best := suggest.Closest(name, Names()); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return " (see `kalab help metrics` for the list)"
}

type refVisitor struct {
	refs    []VariantRef
	reached []string
	err     error
}

func (v *refVisitor) Visit(node *ast.Node) {
	call, ok := (*node).(*ast.CallNode)
	if !ok || v.err != nil {
		return
	}
	id, ok := call.Callee.(*ast.IdentifierNode)
	if ok && id.Value == "plan_reaches" {
		v.planReaches(call)
		return
	}
	if !ok || id.Value != "variant" {
		return
	}
	if len(call.Arguments) != 1 {
		v.err = &Error{Offset: call.Location().From, Message: "variant() takes one variant name"}
		return
	}
	if s, ok := call.Arguments[0].(*ast.StringNode); ok {
		v.refs = append(v.refs, VariantRef{Name: s.Value, Offset: s.Location().From})
	}
}

// planReaches takes the two names of plan_reaches('rules', 'run'), which must be written
// out: the loader checks both, and the run named second keeps its slack.
func (v *refVisitor) planReaches(call *ast.CallNode) {
	if len(call.Arguments) != 2 {
		v.err = &Error{Offset: call.Location().From, Message: planReachesArgs}
		return
	}
	for i, arg := range call.Arguments {
		s, ok := arg.(*ast.StringNode)
		if !ok {
			v.err = &Error{Offset: arg.Location().From, Message: "plan_reaches() takes variant names written as strings, e.g. plan_reaches('model', 'real')"}
			return
		}
		v.refs = append(v.refs, VariantRef{Name: s.Value, Offset: s.Location().From})
		if i == 1 && !slices.Contains(v.reached, s.Value) {
			v.reached = append(v.reached, s.Value)
		}
	}
}

const planReachesArgs = "plan_reaches() takes two variant names: the run whose plan and client rules give the outcomes, and the run whose counts must be one of them, e.g. plan_reaches('model', 'real')"

// reachReads are the metrics plan_reaches weighs of its second run.
var reachReads = []string{"connections", "errors", "failed_bursts_mask"}

func appendRef(refs []Ref, r Ref) []Ref {
	if slices.Contains(refs, r) {
		return refs
	}
	refs = append(refs, r)
	slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Key(), b.Key()) })
	return refs
}

func variantRefs(n ast.Node) (*refVisitor, error) {
	v := &refVisitor{}
	ast.Walk(&n, v)
	return v, v.err
}

// Refs lists the metrics the assertion reads.
func (a *Assertion) Refs() []Ref { return a.refs }

// Eval evaluates an Expect assertion against one run's metrics.
func (a *Assertion) Eval(m Metrics) (bool, error) {
	if a.Kind != Expect {
		return false, errors.New("check: Eval on a compare assertion")
	}
	out, err := expr.Run(a.program, m)
	if err != nil {
		return false, err
	}
	return out.(bool), nil
}

// EvalCompare evaluates a Compare assertion; lookup returns a run's metrics by variant name.
// plan_reaches is not answered (EvalCompareReach).
func (a *Assertion) EvalCompare(lookup func(name string) (Metrics, bool)) (bool, error) {
	return a.EvalCompareReach(lookup, nil)
}

// EvalCompareReach is EvalCompare with reach answering plan_reaches; nil makes a call to
// it an error.
func (a *Assertion) EvalCompareReach(lookup func(name string) (Metrics, bool), reach Reacher) (bool, error) {
	if a.Kind != Compare {
		return false, errors.New("check: EvalCompare on an expect assertion")
	}
	env := CompareEnv{Variant: func(name string) (Metrics, error) {
		m, ok := lookup(name)
		if !ok {
			return Metrics{}, fmt.Errorf("no variant named %q in this scenario", name)
		}
		return m, nil
	}, PlanReaches: func(rules, run string) (bool, error) {
		if reach == nil {
			return false, errors.New("plan_reaches() needs the runs' plans, which this evaluation does not have")
		}
		return reach(rules, run)
	}}
	out, err := expr.Run(a.program, env)
	if err != nil {
		return false, err
	}
	return out.(bool), nil
}

// Closest returns the name in names the user probably meant by name: the nearest by edit
// distance when close enough to be a typo, else "". It is the did-you-mean of unknown
// metrics, and of the command line's commands and flags.
func Closest(name string, names []string) string { return suggest.Closest(name, names) }
