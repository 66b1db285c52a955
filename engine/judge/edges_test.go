package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// edgeSettings: a server that closes after 1 s idle at 10 ms RTT, on the real clock at
// time scale 1: the edges are 1 s and 990 ms.
func edgeSettings() scenario.Settings {
	var st scenario.Settings
	st.TimeScale = 1
	st.Network.RTT = scenario.Duration(10 * time.Millisecond)
	st.Server.IdleTimeout = scenario.Duration(time.Second)
	return st
}

// TestEdgeFlipWeighsEachRequestOnItsOwnEdge, by hand: request 2 begins 960 ms after
// request 1's response on the same connection, 30 ms below the edge at 990 ms; its events
// are those due from 10 ms before that response ended to 10 ms after the edge's instant
// (30 ms past its start). Request 3 follows request 2 at once, 990 ms from the same edge.
func TestEdgeFlipWeighsEachRequestOnItsOwnEdge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name   string
		due    int           // ms from t0
		late   time.Duration // of the one late event
		factor float64
		want   string // "" for no flip
	}{
		{"40 ms late on the request at the edge", 965, 40 * time.Millisecond, 1, "960ms after the response before it ended, 30ms from the edge at 990ms"},
		{"exactly the margin is enough", 965, 30 * time.Millisecond, 1, "30ms from the edge"},
		{"just under the margin is not", 965, 29 * time.Millisecond, 1, ""},
		{"late in the pause's first instants counts", 15, 35 * time.Millisecond, 1, "30ms from the edge"},
		{"before the response ended, out of reach", -1, 500 * time.Millisecond, 1, ""},
		{"in the middle of a burst, far from any edge", 1200, 500 * time.Millisecond, 1, ""},
		{"--lag-tolerance 2 doubles the margin", 965, 40 * time.Millisecond, 2, ""},
		{"--lag-tolerance below 0 judges nothing", 965, 40 * time.Millisecond, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := &Timers{}
			tm.WatchEdges()
			tm.Spans.Add(Span{Start: at(0), End: at(10), Conn: 1})
			tm.Spans.Add(Span{Start: at(970), End: at(980), Conn: 1, Reused: true})
			tm.Spans.Add(Span{Start: at(980), End: at(1500), Conn: 1, Reused: true})
			tm.Link.AddAt(at(tc.due), tc.late)
			tm.Link.AddAt(at(500), 100*time.Microsecond) // under the floor: not kept
			j := New(nil, tc.factor)
			got := j.EdgeFlip(tm, edgeSettings())
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("EdgeFlip = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEdgeFlipNewConnectionRunsFromItsClient: a request on a new connection is judged
// from its client's last response, not from another client's.
func TestEdgeFlipNewConnectionRunsFromItsClient(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tm := &Timers{}
	tm.WatchEdges()
	tm.Spans.Add(Span{Start: at(0), End: at(10), Conn: 1, Client: "a"})
	tm.Spans.Add(Span{Start: at(900), End: at(960), Conn: 2, Client: "b"})
	tm.Spans.Add(Span{Start: at(1005), End: at(1020), Conn: 3, Client: "a"}) // 995 ms after a's response
	tm.Schedule.AddAt(at(1000), 6*time.Millisecond)
	if got := New(nil, 1).EdgeFlip(tm, edgeSettings()); !strings.Contains(got, "995ms after the response before it ended, 5ms from the edge at 1s") {
		t.Fatalf("EdgeFlip = %q", got)
	}
}
