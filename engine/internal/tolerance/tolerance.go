// Package tolerance is how far a metric may move from its baseline before kalab calls it a
// regression: the rule a scenario file's baseline: section and --tolerance write, and the
// baseline comparison reads. A leaf, so the scenario language and the reports share it.
package tolerance

import (
	"fmt"
	"strconv"
	"strings"
)

// Tolerance is how far a metric may move in its worse direction from the baseline run before
// `kalab run --baseline` calls it a regression. It is written "5%" (relative to the baseline
// value), as a plain number (absolute, in the metric's unit) or "off" (never compared).
type Tolerance struct {
	Off      bool    // the metric is not compared
	Relative bool    // Value is a fraction of the baseline value (0.05 for "5%")
	Value    float64 // the fraction, or the absolute amount
	// Line and Col are where a scenario file set it; 0 for defaults and flags.
	Line, Col int
}

// MaxRelative bounds a relative tolerance; more than this would compare nothing.
const MaxRelative = 10 // 1000%

// Parse reads a tolerance as written in a scenario file or a flag: "5%", "2.5",
// "0" or "off".
func Parse(s string) (Tolerance, error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return Tolerance{Off: true}, nil
	}
	num, rel := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	// ParseFloat accepts inf, nan and hex; a tolerance is a plain non-negative decimal.
	if err != nil || v < 0 || v != v || strings.ContainsAny(num, "xXpPiInN") {
		return Tolerance{}, fmt.Errorf("%q is not a tolerance (use a percentage such as 5%%, a non-negative number, or off)", s)
	}
	if rel {
		v /= 100
		if v > MaxRelative {
			return Tolerance{}, fmt.Errorf("%q is more than %d%%; use off to stop comparing the metric", s, MaxRelative*100)
		}
	}
	return Tolerance{Relative: rel, Value: v}, nil
}

// String renders the tolerance as it is written: "5%", "2" or "off".
func (t Tolerance) String() string {
	switch {
	case t.Off:
		return "off"
	case t.Relative:
		return strconv.FormatFloat(t.Value*100, 'f', -1, 64) + "%"
	default:
		return strconv.FormatFloat(t.Value, 'f', -1, 64)
	}
}
