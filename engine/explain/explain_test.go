package explain_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// Every pause (370-390 ms) lies inside the race window (idle − RTT, idle) = (360, 400) ms,
// at least 10 ms from an edge: each burst after the first loses its first request.
const staleRace = `
name: explain-race
network: {rtt: 40ms}
server: {idle_timeout: 400ms}
client: {preset: node-agent}
load: {requests: 12, burst: 2, pause: 370ms..390ms, seed: 1}
`

// On the virtual clock: kalab explain names, for each failure of a stale-race run, the
// pause, the close instant and the FIN's arrival, each equal to what the request and
// connection files say, with the signs the order of events gives; and the records are
// the plan's exactly: the first request of each burst after the first fails, after the
// pause the seed drew, on a connection the server closed 400 ms after writing its last
// response, 20 ms (half the RTT) before the client read it.
func TestExplainMatchesTheRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(file, []byte(staleRace), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: dir, KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, Host: runner.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Runs[0]
	if rec.Clock != scenario.ClockVirtual {
		t.Fatalf("the run went on the %q clock, want virtual", rec.Clock)
	}
	run, err := explain.Load(out.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// 12 requests in bursts of 2 are 6 bursts and 5 pauses, all in the race window: the
	// first request of each burst after the first fails, and node-agent does not retry.
	notable := run.Notable()
	if want := []int{2, 4, 6, 8, 10}; !slices.Equal(notable, want) || rec.Metrics.Errors != 5 {
		t.Fatalf("explain lists requests %v and the run measured %v errors; the plan predicts %v, 5 errors", notable, rec.Metrics.Errors, want)
	}
	pauses := load.Pauses(configure.Load(plan.Scenarios[0].Runs[0].Settings, shape.Scale(1)))
	closes := map[uint64]report.Conn{}
	for _, c := range run.Conns {
		closes[c.ID] = c
	}
	for _, seq := range notable {
		text, _ := explain.Request(run, seq)
		q, prev := run.Requests[seq], run.Requests[seq-1]
		c, ok := closes[q.ServerConn]
		if q.Class == "" || !ok || c.ClosedMs == nil {
			t.Fatalf("request %d: class %q, server conn %d in the records: %v", seq, q.Class, q.ServerConn, ok)
		}
		prevEnd := prev.StartMs + prev.LatencyMs
		pause := q.StartMs - prevEnd
		if drawn := float64(pauses[seq/2-1]) / float64(time.Millisecond); math.Abs(pause-drawn) > 1e-6 {
			t.Errorf("request %d: a pause of %v ms, the seed drew %v ms", seq, pause, drawn)
		}
		if want := prevEnd - 20 + 400; *c.ClosedMs != want {
			t.Errorf("request %d: its connection closed at %v ms, want %v (400 ms after the server wrote request %d's response)", seq, *c.ClosedMs, want, seq-1)
		}
		closed, fin, at := *c.ClosedMs, *c.ClosedMs+20, q.StartMs+20
		want := []string{
			fmt.Sprintf("Request %d failed with %s", seq, q.Class),
			fmt.Sprintf("a pause of %.1f ms", pause),
			fmt.Sprintf("closed it at %.1f ms (idle timeout", closed),
			fmt.Sprintf("FIN reached the client at about %.1f ms (one-way delay 20.0 ms)", fin),
			fmt.Sprintf("sent the request at %.1f ms, %s", q.StartMs, side(q.StartMs, fin, "that FIN arrived")),
			fmt.Sprintf("reached the server at about %.1f ms, %s", at, side(at, closed, "the close")),
			"node-agent does not retry",
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("request %d: the explanation lacks %q:\n%s", seq, w, text)
			}
		}
	}
	if all := explain.All(run); strings.Count(all, "\n\n")+1 != len(notable) {
		t.Errorf("All wrote %d paragraphs for %d requests", strings.Count(all, "\n\n")+1, len(notable))
	}
}

// side is the signed distance in words, computed here independently of the package.
func side(a, b float64, what string) string {
	if a >= b {
		return fmt.Sprintf("%.1f ms after %s", a-b, what)
	}
	return fmt.Sprintf("%.1f ms before %s", b-a, what)
}
