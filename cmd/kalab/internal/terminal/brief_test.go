package terminal

import (
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// The quiet summary gives a noisy run's line as Run.BriefError shortens it: its first late
// timer against its tolerance, how many more, and where the whole text is.
func TestBriefShowsTheBriefError(t *testing.T) {
	t.Parallel()
	set := " set by errors in the expect check at scenarios/04-stale-race.yaml:45:14"
	reason := "link timers fired 31.20 ms late at the p99 (of 1204, max 48.00 ms) against a tolerance of 5.00 ms" + set +
		"; schedule timers fired 9.10 ms late at the p99 (of 100, max 12.00 ms) against a tolerance of 5.00 ms" + set +
		"; idle_close timers fired 7.00 ms late at the p99 (of 57, max 9.00 ms) against a tolerance of 5.00 ms" + set
	noisy := &report.Run{Status: report.StatusError, Timing: &report.Timing{Noisy: true, Reason: reason},
		Error: "the machine could not hold this run's timing: 3 attempts were noisy (" + reason + "), and no headroom for another within 30s (load 9.1); no verdict was given. Run it with a larger --time-scale, fewer runs at once (--parallel 1), or on a less busy machine"}
	want := "no verdict, too noisy: link timers fired 31.20 ms late at the p99 against a tolerance of 5.00 ms and 2 more; try --parallel 1 or a larger --time-scale (the whole text: results.jsonl)"
	var b strings.Builder
	if err := Brief(&b, []*report.Run{noisy}, nil); err != nil || !strings.Contains(b.String(), ": error: "+want+"\n") {
		t.Errorf("the quiet summary: %q", b.String())
	}
}
