package report

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A noisy run's terminal line stays under 200 characters and names its first late timer
// against its tolerance, how many more there were, and where the whole text is; a short
// error is kept as it is, a long one of another kind is cut.
func TestBriefError(t *testing.T) {
	t.Parallel()
	set := " set by errors in the expect check at scenarios/04-stale-race.yaml:45:14"
	reason := "link timers fired 31.20 ms late at the p99 (of 1204, max 48.00 ms) against a tolerance of 5.00 ms" + set +
		"; schedule timers fired 9.10 ms late at the p99 (of 100, max 12.00 ms) against a tolerance of 5.00 ms" + set +
		"; idle_close timers fired 7.00 ms late at the p99 (of 57, max 9.00 ms) against a tolerance of 5.00 ms" + set
	noisy := &Run{Status: StatusError, Timing: &Timing{Noisy: true, Reason: reason},
		Error: "the machine could not hold this run's timing: 3 attempts were noisy (" + reason + "), and no headroom for another within 30s (load 9.1); no verdict was given. Run it with a larger --time-scale, fewer runs at once (--parallel 1), or on a less busy machine"}
	got := noisy.BriefError()
	want := "no verdict, too noisy: link timers fired 31.20 ms late at the p99 against a tolerance of 5.00 ms and 2 more; try --parallel 1 or a larger --time-scale (the whole text: results.jsonl)"
	if got != want {
		t.Errorf("noisy run:\n got %q\nwant %q", got, want)
	}
	if n := len(got); n > 200 || strings.Count(got, "set by") > 0 {
		t.Errorf("noisy run: %d characters, %d 'set by'", n, strings.Count(got, "set by"))
	}
	short := &Run{Status: StatusError, Error: "server: listen tcp 127.0.0.1:0: too many open files"}
	if got := short.BriefError(); got != short.Error {
		t.Errorf("a short error became %q", got)
	}
	long := &Run{Status: StatusError, Error: strings.Repeat("é", 300)}
	if got := long.BriefError(); len(got) > 200 || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (the whole text: results.jsonl)") {
		t.Errorf("a long error became %q (%d bytes)", got, len(got))
	}
}
