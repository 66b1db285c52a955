package logline

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// A noisy run's reason, as the runner logs it before a rerun, becomes its first late timer
// and a count; any other long value is cut at Max; short values pass as they are.
func TestValue(t *testing.T) {
	set := " set by errors in the expect check at scenarios/04-stale-race.yaml:45:14"
	reason := "link timers fired 31.20 ms late at the p99 (of 1204, max 48.00 ms) against a tolerance of 5.00 ms" + set +
		"; schedule timers fired 9.10 ms late at the p99 (of 100, max 12.00 ms) against a tolerance of 5.00 ms" + set
	if got, want := Value(strconv.Quote(reason)), `"link timers fired 31.20 ms late at the p99 against a tolerance of 5.00 ms and 1 more"`; got != want {
		t.Errorf("noisy reason: %s, want %s", got, want)
	}
	long := strings.Repeat("é", 300)
	if got := Value(long); utf8.RuneCountInString(got) != Max || !strings.HasSuffix(got, "…") {
		t.Errorf("a long value became %d characters: %q", utf8.RuneCountInString(got), got)
	}
	if got := Value("node-agent"); got != "node-agent" {
		t.Errorf("a short value became %q", got)
	}
}
