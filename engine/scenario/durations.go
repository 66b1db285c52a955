package scenario

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// maxDuration is the longest duration a run can hold once its time scale is applied: what a
// time.Duration holds (about 292 years).
const maxDuration = Duration(math.MaxInt64)

// durationSyntax matches what time.ParseDuration reads; a string that matches it but does
// not parse is too large.
var durationSyntax = regexp.MustCompile(`^(([0-9]*(\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h))+$`)

// durationAt is a duration of a run's settings and where it was written.
type durationAt struct {
	path      string
	d         Duration
	line, col int
}

// durationFields lists the durations of st by field path (range and hint values included),
// in field order.
func durationFields(st Settings) []durationAt {
	var out []durationAt
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch x := v.Interface().(type) {
		case Duration:
			out = append(out, durationAt{path: path, d: x})
			return
		case Range:
			out = append(out, durationAt{path: path, d: x.Max})
			return
		case Hint:
			out = append(out, durationAt{path: path, d: x.Duration})
			return
		}
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			walk(v.Elem(), path) // an optional section (middlebox, balancer) when set
			return
		}
		if v.Kind() != reflect.Struct {
			return
		}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			walk(v.Field(i), yamldoc.JoinPath(path, name))
		}
	}
	walk(reflect.ValueOf(st), "")
	// A chain's first item was walked as middlebox (balancer); each item by its index
	// instead.
	if len(st.MiddleboxChain) > 1 {
		out = without(out, "middlebox.")
		for i, b := range st.MiddleboxChain {
			walk(reflect.ValueOf(*b), MiddleboxPath(i, len(st.MiddleboxChain)))
		}
	}
	if len(st.BalancerChain) > 1 {
		out = without(out, "balancer.")
		for i, b := range st.BalancerChain {
			walk(reflect.ValueOf(*b), BalancerPath(i, len(st.BalancerChain)))
		}
	}
	return out
}

// without drops the durations under prefix.
func without(durs []durationAt, prefix string) []durationAt {
	kept := durs[:0]
	for _, d := range durs {
		if !strings.HasPrefix(d.path, prefix) {
			kept = append(kept, d)
		}
	}
	return kept
}

// scaleProblems lists the durations that overflow once multiplied by scale.
func scaleProblems(durs []durationAt, scale float64) []durationAt {
	var bad []durationAt
	for _, d := range durs {
		if float64(d.d)*scale >= float64(maxDuration) {
			bad = append(bad, d)
		}
	}
	return bad
}

func scaleMessage(d durationAt, scale float64, where string) string {
	return fmt.Sprintf("%s times the time scale %g is longer than a run can measure (at most %v, about 292 years)%s",
		d.d, scale, time.Duration(maxDuration).Truncate(time.Hour), where)
}

// CheckTimeScale checks the plan's durations under a time scale that overrides each file's
// (kalab run --time-scale): a duration that overflows once scaled is reported where it was
// written, as at load time.
func (p *Plan) CheckTimeScale(scale float64) error {
	var diags Diagnostics
	for _, sc := range p.Scenarios {
		for _, r := range sc.Runs {
			for _, d := range scaleProblems(r.durations, scale) {
				diags = append(diags, Diagnostic{File: sc.File, Line: d.line, Col: d.col, Path: d.path,
					Message: scaleMessage(d, scale, fmt.Sprintf(" (run %s, --time-scale)", r.Variant))})
			}
		}
	}
	if len(diags) > 0 {
		return diags.Sorted()
	}
	return nil
}
