// Package suggest finds the name a user probably meant, for "did you mean" hints: in
// scenario fields, metric names, and the CLI's commands and flags.
package suggest

// Closest returns the candidate nearest to s by edit distance when it is close enough to be
// a typo (at most a third of the letters differ, and at least one may), else "".
func Closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := Distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(1, len(s)/3) {
		return best
	}
	return ""
}

// Distance is the Levenshtein edit distance between a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
