package report

import (
	"fmt"
	"regexp"
	"strings"
)

// briefMax bounds the terminal's line about a run without a verdict; the record keeps the
// whole text (error, and timing for a noisy run).
const briefMax = 200

// ofN is the sample count and maximum a noisy reason gives in parentheses.
var ofN = regexp.MustCompile(` \(of [^)]*\)`)

// BriefError is the run's error for a terminal line: as recorded when it is short; for a run
// too noisy to judge, its first late timer against its tolerance and how many more, with
// what to do; any other long error cut at briefMax. results.jsonl keeps the whole text.
func (r *Run) BriefError() string {
	const tail = " (the whole text: results.jsonl)"
	if len(r.Error) <= briefMax {
		return r.Error
	}
	if t := r.Timing; t != nil && t.Noisy && t.Reason != "" {
		s := "no verdict, too noisy: " + BriefReason(t.Reason) + "; try --parallel 1 or a larger --time-scale" + tail
		if len(s) <= briefMax {
			return s
		}
	}
	cut := r.Error[:briefMax-len(tail)-len("…")]
	for len(cut) > 0 && cut[len(cut)-1]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut = cut[:len(cut)-1]
	}
	if len(cut) > 0 && cut[len(cut)-1] >= 0xC0 {
		cut = cut[:len(cut)-1]
	}
	return cut + "…" + tail
}

// BriefReason shortens a noisy run's timing reason (timing.reason: every late timer source
// against its tolerance, each with the check that set it) to its first source, without its
// sample count or the check, and how many more there are.
func BriefReason(reason string) string {
	first, rest, _ := strings.Cut(reason, "; ")
	first, _, _ = strings.Cut(ofN.ReplaceAllString(first, ""), " set by ")
	if rest != "" {
		first += fmt.Sprintf(" and %d more", strings.Count(rest, "; ")+1)
	}
	return first
}
