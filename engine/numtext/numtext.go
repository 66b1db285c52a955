// Package numtext writes the figures of kalab's tables and messages.
//
// The engine and the command line both use it; it is kalab's own, not a stable API for
// other modules.
package numtext

import "strconv"

// Format writes a figure as kalab's tables show it: a whole number without decimals, one
// decimal from 100 up, three below.
func Format(f float64) string {
	switch {
	case f == float64(int64(f)) && f < 1e15 && f > -1e15:
		return strconv.FormatInt(int64(f), 10)
	case f >= 100 || f <= -100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 3, 64)
	}
}
