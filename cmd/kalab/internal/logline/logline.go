// Package logline keeps the command's human log lines short: a field value longer than a
// line can hold is cut, and a noisy run's timing reason is told by its first late timer.
// The JSON log format (--log-format json) keeps every value whole, and a run's record keeps
// its error and timing whole.
package logline

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kalab-dev/kalab/engine/report"
)

// Max is the most characters of one field value in a human log line.
const Max = 120

// Value formats a field value for zerolog's ConsoleWriter (its FormatFieldValue): as the
// default does, shortened past Max. A string value arrives quoted when it needs quotes.
func Value(i any) string {
	s := fmt.Sprintf("%s", i)
	if utf8.RuneCountInString(s) <= Max {
		return s
	}
	quoted := strings.HasPrefix(s, `"`)
	if quoted {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if strings.Contains(s, " late at the ") && strings.Contains(s, " set by ") {
		s = report.BriefReason(s) // a noisy run's reason: the record's timing has all of it
	}
	if r := []rune(s); len(r) > Max {
		s = string(r[:Max-1]) + "…"
	}
	if quoted {
		return strconv.Quote(s)
	}
	return s
}
