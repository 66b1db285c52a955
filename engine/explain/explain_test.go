package explain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/internal/testci"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
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

// On real sockets: kalab explain names, for each failure of a stale-race run, the pause,
// the close instant and the FIN's arrival, each equal to what the request and connection
// files say, with the signs the order of events gives.
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
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: dir, KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, HeadroomWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Runs[0]
	if rec.Timing != nil && rec.Timing.Noisy {
		testci.SkipOrFail(t, "the run was noisy (%s): this machine is too busy to judge it", rec.Timing.Reason)
	}
	run, err := explain.Load(out.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	notable := run.Notable()
	if len(notable) != int(rec.Metrics.Errors) || len(notable) == 0 {
		t.Fatalf("explain lists requests %v; the run measured %v errors (5 predicted)", notable, rec.Metrics.Errors)
	}
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
		pause := q.StartMs - (prev.StartMs + prev.LatencyMs)
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
