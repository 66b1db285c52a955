package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// replayRTT and replayIdle make the race window of a client's idle gap (idle − RTT, idle)
// = (500, 600) ms: the server's close has not reached the client yet, and the request
// reaches the server after it closed (the window the oracle uses for pauses).
const (
	replayRTT  = 100 * time.Millisecond
	replayIdle = 600 * time.Millisecond
)

// threeClients are the recorded start times (ms from the first) of three clients. The
// gaps after each response (a new plain connection costs 2 RTT, a reused one 1) put A's
// second and fifth and B's third request in the window's upper half (575 ms), every other
// gap well below it (reuse) or past the idle timeout (a new connection, no error).
var threeClients = map[string][]int{
	"10.0.0.1": {0, 775, 2500, 2800, 3475},
	"10.0.0.2": {0, 500, 1175, 2200, 2700},
	"10.0.0.3": {50, 450, 950, 2050, 2400},
}

// replayed is one recorded request in the order the replay sends it.
type replayed struct {
	client string
	at     int
	line   int
}

// writeRecording writes the clients' requests as an nginx combined log with $request_time
// and $msec, one line a request in start order, the bad line after the first, and returns
// the requests in the replay's order (start, then line).
func writeRecording(t *testing.T, dir string, clients map[string][]int) []replayed {
	t.Helper()
	var reqs []replayed
	for c, starts := range clients {
		for _, at := range starts {
			reqs = append(reqs, replayed{client: c, at: at})
		}
	}
	sort.Slice(reqs, func(i, j int) bool {
		if reqs[i].at != reqs[j].at {
			return reqs[i].at < reqs[j].at
		}
		return reqs[i].client < reqs[j].client
	})
	var b strings.Builder
	line := 0
	base := int64(1796180400000) // 2026-12-02T03:00:00Z in ms
	for i := range reqs {
		line++
		reqs[i].line = line
		// Logged at the end of the request: $msec is the start plus $request_time.
		end := base + int64(reqs[i].at) + 7
		fmt.Fprintf(&b, "%s - - [02/Dec/2026:03:00:00 +0000] \"GET / HTTP/1.1\" 200 200 \"-\" \"test\" 0.007 %d.%03d\n", reqs[i].client, end/1000, end%1000)
		if i == 0 {
			line++
			b.WriteString("this line is not a request\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return reqs
}

// expectedGaps walks each client's gaps as the oracle walks pauses: a gap below
// idle − RTT reuses the connection, one inside (idle − RTT, idle) races the server's close
// (an error; the connection is gone), one past idle finds the close and opens a new
// connection. It returns the failing requests' positions in send order, the connections
// opened and the idle gap (ms) before each failing request. A gap within margin of an edge
// would make the plan ambiguous.
func expectedGaps(t *testing.T, reqs []replayed) (fails []int, conns int, gaps map[int]int) {
	t.Helper()
	const margin = 25
	rtt, idle := int(replayRTT/time.Millisecond), int(replayIdle/time.Millisecond)
	type state struct {
		end  int
		live bool
	}
	clients := map[string]*state{}
	gaps = map[int]int{}
	for seq, r := range reqs {
		s := clients[r.client]
		if s == nil {
			s = &state{}
			clients[r.client] = s
		}
		gap := r.at - s.end
		near := func(edge int) bool { return gap > edge-margin && gap < edge+margin }
		switch {
		case s.live && (near(idle-rtt) || near(idle)):
			t.Fatalf("%s at %d ms: gap %d ms within %d ms of a window edge", r.client, r.at, gap, margin)
		case !s.live || gap >= idle:
			conns++
			s.end, s.live = r.at+2*rtt, true
		case gap <= idle-rtt:
			s.end = r.at + rtt
		default:
			fails = append(fails, seq)
			gaps[seq] = gap
			s.end, s.live = r.at+rtt, false
		}
	}
	return fails, conns, gaps
}

func replayScenario(dir string) string {
	return fmt.Sprintf(`
name: replay-three
network: {rtt: %v}
server: {idle_timeout: %v}
client: {preset: node-agent}
load: {replay: access.log}
`, replayRTT, replayIdle)
}

// A recording of three clients with known gaps reproduces exactly the races its gaps
// predict, on the virtual clock: each client has its own pool, so only its own idle gaps
// decide its races, and exactly the 3 requests the gaps put in the race window fail. kalab
// explain tells each one's story from its own client's requests: the client, the pause since
// its own previous response (the recording's gap to the millisecond, no timer being late)
// and the window it fell in, never another client's request or a negative pause. The bad
// line is counted with its number.
func TestReplayThreeClientsRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reqs := writeRecording(t, dir, threeClients)
	wantFails, wantConns, gaps := expectedGaps(t, reqs)
	if len(wantFails) != 3 || wantConns != 6 {
		t.Fatalf("the plan gives %d races and %d connections; the recording is built for 3 and 6", len(wantFails), wantConns)
	}
	out, err := Execute(context.Background(), planIn(t, dir, replayScenario(dir)), virtualOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Runs[0]
	if rec.Status != report.StatusPass || rec.Clock != scenario.ClockVirtual {
		t.Fatalf("run %s on the %s clock: %s", rec.Status, rec.Clock, rec.Error)
	}
	// Every line, the replay block included, fits the result schema.
	if err := report.ValidateRunDir(out.Dir); err != nil {
		t.Fatal(err)
	}
	if got := failedSeqs(t, out.Dir); fmt.Sprint(got) != fmt.Sprint(wantFails) || rec.Metrics.Connections != float64(wantConns) {
		var lines []string
		for _, seq := range wantFails {
			lines = append(lines, fmt.Sprintf("%s@%dms", reqs[seq].client, reqs[seq].at))
		}
		t.Errorf("failed requests %v (connections %v); the gaps predict %v (%s) and %d connections",
			got, rec.Metrics.Connections, wantFails, strings.Join(lines, ", "), wantConns)
	}
	run, err := explain.Load(out.Dir, "replay-three/default")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range wantFails {
		text, ok := explain.Request(run, seq)
		want := fmt.Sprintf("Client %s sent it after a pause of %d.0 ms (from its request", reqs[seq].client, gaps[seq])
		if !ok || !strings.Contains(text, want) || !strings.Contains(text, "inside the race window (idle − RTT, idle) = (500.0 ms, 600.0 ms)") {
			t.Errorf("request %d (%s at %d ms, gap %d ms):\n%s\nwant %q and the race window", seq, reqs[seq].client, reqs[seq].at, gaps[seq], text, want)
		}
	}
	rp := rec.Replay
	if rp == nil {
		t.Fatal("no replay block in the record")
	}
	if rp.Requests != len(reqs) || rp.Clients != 3 || rp.Lines != len(reqs)+1 || rp.BadLines != 1 ||
		len(rp.FirstBad) != 1 || rp.FirstBad[0].Line != 2 || rp.FirstBad[0].Reason == "" {
		t.Errorf("replay block %+v; want %d requests, 3 clients, bad line 2 with a reason", rp, len(reqs))
	}
}

// The same recording on the real clock: the replay's own timers send each request, so a
// pause is the recording's gap plus what the machine added, judged like any run's timing
// (a run whose lateness could carry a gap across the window's edge is noisy, and says so).
// The same 3 requests fail, and kalab explain tells each from its own client's requests:
// the right client, a pause within the gap's 25 ms margin of the recording's gap, inside
// the race window.
func TestReplayThreeClientsRaceRealClock(t *testing.T) {
	if testci.Race() {
		// The detector slows every goroutine past what the replay's timers see (a request's
		// race once came out wrong, not noisy); the plain pass judges this test.
		t.Skip("real-clock replay races under the race detector measure the detector") // skip: -race only: CI's plain pass runs it
	}
	t.Parallel()
	dir := t.TempDir()
	reqs := writeRecording(t, dir, threeClients)
	wantFails, _, gaps := expectedGaps(t, reqs)
	out, err := Execute(context.Background(), planIn(t, dir, replayScenario(dir)+"clock: real\n"), opts(t))
	if err != nil {
		t.Fatal(err)
	}
	skipIfNoisy(t, out)
	rec := out.Runs[0]
	if rec.Status != report.StatusPass || rec.Clock != scenario.ClockReal {
		t.Fatalf("run %s on the %s clock: %s", rec.Status, rec.Clock, rec.Error)
	}
	if got := failedSeqs(t, out.Dir); fmt.Sprint(got) != fmt.Sprint(wantFails) {
		t.Fatalf("failed requests %v; the gaps predict %v", got, wantFails)
	}
	run, err := explain.Load(out.Dir, "replay-three/default")
	if err != nil {
		t.Fatal(err)
	}
	byseq := requestsBySeq(t, out.Dir)
	for _, seq := range wantFails {
		text, ok := explain.Request(run, seq)
		prefix := fmt.Sprintf("Client %s sent it after a pause of ", reqs[seq].client)
		i := strings.Index(text, prefix)
		var pause float64
		prev := -1
		if i >= 0 {
			_, _ = fmt.Sscanf(text[i+len(prefix):], "%f ms (from its request %d's response", &pause, &prev)
		}
		// The pause runs from the response's arrival as this run measured it, which a real
		// round trip or a busy machine may put later than the recording's gap says; the
		// explanation must give the measured one.
		var measured float64
		if p, ok := byseq[prev]; ok && prev < seq && reqs[prev].client == reqs[seq].client {
			measured = byseq[seq].StartMs - (p.StartMs + p.LatencyMs)
		}
		if ok && i >= 0 && measured != 0 && math.Abs(pause-measured) <= 0.06 && (measured <= 500 || measured >= 600) {
			// The replay sends on the recording's schedule; a previous response the machine
			// delivered late shortens the pause as measured (489.9 ms once, beside a loaded
			// test pass) while the request still races as the recording's gap says. The
			// explanation gives the measured pause, as it should, and says lateness moved it
			// in; whether the window claim holds is the machine's to decide, not explain's.
			testci.SkipOrFail(t, "request %d: the machine moved its measured pause to %.1f ms, outside the window (500, 600) ms its recorded gap of %d ms lies in", seq, measured, gaps[seq])
			continue
		}
		if !ok || i < 0 || measured == 0 || math.Abs(pause-measured) > 0.06 || pause <= 500 || pause >= 600 ||
			!strings.Contains(text, "inside the race window (idle − RTT, idle) = (500.0 ms, 600.0 ms)") {
			t.Errorf("request %d (%s at %d ms, gap %d ms):\n%s\nwant a pause from its own client's request %d of %.1f ms (measured), inside the window (500, 600) ms",
				seq, reqs[seq].client, reqs[seq].at, gaps[seq], text, prev, measured)
		}
	}
}

// requestsBySeq reads the run's request file by seq.
func requestsBySeq(t *testing.T, dir string) map[int]report.Request {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.RequestsPath("replay-three", "default")))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]report.Request{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r report.Request
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out[r.Seq] = r
	}
	return out
}

// failedSeqs reads the run's request file and returns the seqs that failed, sorted.
func failedSeqs(t *testing.T, dir string) []int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, report.RequestsPath("replay-three", "default")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r report.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Class != "" {
			out = append(out, r.Seq)
		}
	}
	sort.Ints(out)
	return out
}
