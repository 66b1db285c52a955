package report

import (
	"sort"

	"github.com/kalab-dev/kalab/engine/numtext"
)

// Observed renders observed values as "name=value, ..." in key order.
func Observed(obs map[string]float64) string {
	keys := make([]string, 0, len(obs))
	for k := range obs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += k + "=" + num(obs[k])
	}
	return out
}

func num(f float64) string { return numtext.Format(f) }
