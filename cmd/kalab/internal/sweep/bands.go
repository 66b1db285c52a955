package sweep

import (
	"fmt"
	"math"
	"strings"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"
)

// geometrySentence sets the brackets found beside the geometry's edges inside the range:
// they agree when each edge lies inside a bracket of the same direction, or within one
// resolution of it, and each bracket has such an edge; otherwise the sentence says which
// differ, by how much, and what can make them. Where these seeds' pauses race nowhere (no
// edges), the first bracket is set beside the geometry's bound. "" without a prediction,
// or with neither a bracket nor an edge in the range.
func geometrySentence(rec *Record, res *Result, format func(float64) string) string {
	p := rec.Prediction
	if p == nil {
		return ""
	}
	tol := rec.Resolution * (1 + 1e-9)
	if len(p.Edges) == 0 {
		if len(res.Brackets) == 0 {
			return ""
		}
		return boundSentence(rec, res.Brackets[0], format)
	}
	edges := p.EdgesIn(rec.Lo, rec.Hi, rec.Resolution)
	if len(edges) == 0 && len(res.Brackets) == 0 {
		return ""
	}
	used := make([]bool, len(res.Brackets))
	var agree, differ []string
	for _, e := range edges {
		i := nearestBracket(res.Brackets, used, e)
		if i < 0 || offBracket(res.Brackets[i], e.At) > tol {
			differ = append(differ, fmt.Sprintf("its edge %s has no bracket within one resolution", format(e.At)))
			continue
		}
		used[i] = true
		lo, hi := span(res.Brackets[i])
		agree = append(agree, fmt.Sprintf("its boundary %s lies within one resolution of the bracket %s..%s", format(e.At), format(lo), format(hi)))
	}
	for i, b := range res.Brackets {
		if !used[i] {
			lo, hi := span(b)
			differ = append(differ, fmt.Sprintf("the bracket %s..%s has no edge of the geometry within one resolution", format(lo), format(hi)))
		}
	}
	if len(differ) == 0 {
		return "the geometry agrees: " + strings.Join(agree, "; ")
	}
	return fmt.Sprintf("the geometry disagrees: %s (resolution %s). %s", strings.Join(differ, "; "), format(rec.Resolution), whyDiffer)
}

const whyDiffer = "On the real clock, timers the machine made late move pauses across the race window (each run's timing says by how much); " +
	"on the virtual clock no timer is late, so the runs and the geometry's rules differ: look at the runs past the boundary with kalab explain"

// nearestBracket is the unused bracket of e's direction nearest to it, or -1.
func nearestBracket(bs []Bracket, used []bool, e geometry.Edge) int {
	best, off := -1, math.Inf(1)
	for i, b := range bs {
		if used[i] || (b.Safe < b.Unsafe) != e.Up {
			continue
		}
		if d := offBracket(b, e.At); d < off {
			best, off = i, d
		}
	}
	return best
}

// offBracket is how far v lies outside the bracket (0 inside it).
func offBracket(b Bracket, v float64) float64 {
	lo, hi := span(b)
	return math.Max(0, math.Max(lo-v, v-hi))
}

func span(b Bracket) (lo, hi float64) { return math.Min(b.Safe, b.Unsafe), math.Max(b.Safe, b.Unsafe) }

// boundSentence sets a bracket beside the geometry's bound.
func boundSentence(rec *Record, b Bracket, format func(float64) string) string {
	lo, hi := span(b)
	off := offBracket(b, rec.Prediction.Bound)
	if off <= rec.Resolution*(1+1e-9) {
		return fmt.Sprintf("the geometry agrees: its boundary %s lies within one resolution of the bracket %s..%s", format(rec.Prediction.Bound), format(lo), format(hi))
	}
	return fmt.Sprintf("the geometry disagrees: its boundary %s lies %s outside the bracket %s..%s, more than the resolution %s. %s",
		format(rec.Prediction.Bound), format(off), format(lo), format(hi), format(rec.Resolution), whyDiffer)
}

// bandSentence replaces "safe over the whole range" when the geometry names a band inside
// it: the runs passed there too, which the sentence says, without calling the range safe.
func bandSentence(rec *Record, res *Result, format func(float64) string, ctx string) string {
	var names []string
	judged, unjudged := 0, 0
	for _, b := range rec.Prediction.Bands(rec.Lo, rec.Hi, rec.Resolution) {
		names = append(names, format(math.Max(b.Lo, rec.Lo))+".."+format(math.Min(b.Hi, rec.Hi)))
		for _, st := range res.Steps {
			if b.Contains(st.Value) && st.Verdict == Unjudged {
				unjudged++
			} else if b.Contains(st.Value) {
				judged++
			}
		}
	}
	s := fmt.Sprintf("%s: %s at every seed of every point judged, but the range %s..%s is not called safe: the geometry puts a race in %s",
		rec.Param, rec.Check, format(rec.Lo), format(rec.Hi), strings.Join(names, ", "))
	switch {
	case judged == 0 && unjudged == 0:
		return s + ", and no point there was run" + ctx
	case judged == 0:
		return s + fmt.Sprintf(", and none of the %d point%s run there has a verdict%s", unjudged, plural(unjudged), ctx)
	}
	return s + fmt.Sprintf(", where %d point%s passed too: the check does not see the race there (a re-send hides it), or the runs and the geometry's rules differ (kalab explain shows the runs)%s",
		judged, plural(judged), ctx)
}

// unsafeBands names each stretch of unsafe points with a safe point on either side (the
// unjudged ones between are passed over): a band the sweep found, in one sentence each.
func unsafeBands(rec *Record, res *Result, format func(float64) string) []string {
	var out []string
	var below, first, last *Step
	for _, st := range res.Steps {
		switch {
		case st.Verdict == Unjudged:
		case st.Verdict == Unsafe && below != nil:
			if first == nil {
				first = st
			}
			last = st
		case st.Verdict == Safe && first != nil:
			out = append(out, fmt.Sprintf("%s fails from %s to %s and passes at %s and %s: an unsafe band inside the range",
				rec.Param, format(first.Value), format(last.Value), format(below.Value), format(st.Value)))
			below, first, last = st, nil, nil
		case st.Verdict == Safe:
			below = st
		}
	}
	return out
}
