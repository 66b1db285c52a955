package timeline

import (
	"fmt"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

func TestPausesBetweenBurstsAreFound(t *testing.T) {
	t.Parallel()
	var reqs []Request
	for i, s := range []float64{0, 100, 1600, 1700, 3800, 3900} { // bursts of 2, pauses of 1.4 s and 2 s
		reqs = append(reqs, Request{Request: report.Request{Seq: i, StartMs: s, LatencyMs: 100}})
	}
	got := findPauses(reqs, Plan{Burst: 2, PauseMinMs: 1000})
	want := [][2]float64{{200, 1600}, {1800, 3800}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pauses %v; want %v", got, want)
	}
	if p := findPauses(reqs, Plan{}); p != nil {
		t.Fatalf("pauses %v without bursts in the plan", p)
	}
}
