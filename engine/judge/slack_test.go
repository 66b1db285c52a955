package judge

import (
	"reflect"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// TestSlackOfByHand: bursts of two at 10 ms RTT over TLS (a new connection takes two round
// trips before its request), a 500 ms pause, at time scale 2 (slack is kept in scenario
// time: half the real figures). Request 0 opens a connection in 31 ms (1 more than its
// three round trips); request 1 starts 0.4 ms after it ends and reuses in 10 ms; request 2
// starts 503 ms after that (3 ms after the pause) and fails after 12 ms (2 more than the
// one round trip a race can take); request 3 starts 1 ms after and opens a connection in
// 30 ms.
func TestSlackOfByHand(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	spans := []Span{
		{Seq: 0, Start: at(0), End: at(31_000)},
		{Seq: 1, Start: at(31_400), End: at(41_400), Reused: true},
		{Seq: 2, Start: at(544_400), End: at(556_400), Reused: true, Failed: true},
		{Seq: 3, Start: at(557_400), End: at(587_400)},
	}
	p := SlackPlan{Burst: 2, Pauses: []time.Duration{500 * time.Millisecond}, RTT: 10 * time.Millisecond, Handshakes: 2, Scale: 2}
	got := SlackOf(spans, p, time.Millisecond)
	want := &report.Slack{BeforeMs: []float64{0, 0.2, 1.5, 0.5}, DuringMs: []float64{0.5, 0, 1, 0}, MarginMs: 0.5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SlackOf = %+v, worked by hand %+v", got, want)
	}
	// A pause the program ended 1 ms early is a negative slack (0.5 ms at time scale 2).
	early := append([]Span(nil), spans...)
	early[2].Start, early[2].End = at(540_400), at(552_400)
	if got := SlackOf(early, p, 0); got == nil || got.BeforeMs[2] != -0.5 {
		t.Errorf("a pause ended early: %+v", got)
	}
	if SlackOf(spans[1:], p, 0) != nil {
		t.Error("a run missing request 0 has a slack")
	}
	overlap := []Span{{Seq: 0, Start: at(0), End: at(20_000)}, {Seq: 1, Start: at(10_000), End: at(30_000)}}
	if SlackOf(overlap, p, 0) != nil {
		t.Error("two requests in flight at once have a slack")
	}
}
