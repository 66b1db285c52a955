// Package flaghint suggests the flag a command line meant when pflag reports an unknown one.
package flaghint

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/engine/check"
)

// For suggests the flag meant when err is pflag's "unknown flag: --NAME": " (did you mean
// --X?)", or "" when nothing is close.
func For(fs *pflag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if c := check.Closest(name, names); c != "" {
		return fmt.Sprintf(" (did you mean --%s?)", c)
	}
	return ""
}
