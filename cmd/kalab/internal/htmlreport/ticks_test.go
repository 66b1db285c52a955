package htmlreport

import (
	"regexp"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
	"github.com/kalab-dev/kalab/engine/report"
)

// The latency axis labels each tick once: a run whose requests all took 60,100 ms (file
// 20's long poll) has one label under its one bar, and a range narrower than the labels'
// precision repeats none.
func TestHistogramTicksDistinct(t *testing.T) {
	t.Parallel()
	tick := regexp.MustCompile(`<text class="lbl" x="[0-9.]+" y="222" text-anchor="(?:middle|end)">([^<]+)</text>`)
	for _, c := range []struct {
		name string
		lat  []float64
		want int // labels
	}{
		{"one latency", []float64{60100}, 1},
		{"two equal", []float64{60100, 60100}, 1},
		{"a narrow range", []float64{100.01, 100.02}, 1},
		{"a wide range", []float64{100, 400}, 7},
	} {
		var reqs []timeline.Request
		for _, l := range c.lat {
			reqs = append(reqs, timeline.Request{Request: report.Request{LatencyMs: l, Status: 200}})
		}
		got := tick.FindAllStringSubmatch(string(histogram(reqs)), -1)
		seen := map[string]bool{}
		for _, m := range got {
			if seen[m[1]] {
				t.Errorf("%s: the label %q twice", c.name, m[1])
			}
			seen[m[1]] = true
		}
		if len(got) != c.want {
			t.Errorf("%s: %d latency labels %v; want %d", c.name, len(got), got, c.want)
		}
		if c.name == "one latency" && len(got) == 1 && got[0][1] != "60100 ms" {
			t.Errorf("one latency: labelled %q; want 60100 ms", got[0][1])
		}
	}
}
