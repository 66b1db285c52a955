package sweep

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/browsertest"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"
)

// The browser tests' Chromium (cmd/kalab/cmd/kalab/internal/browsertest).
var (
	chromium = browsertest.Chromium
	headless = browsertest.Headless
)

// The plot of a search (a fake run whose errors grow past 1.853 s, seeds disagreeing)
// opened in Chromium: the DOM has one point per value, the boundary and the prediction,
// and the screenshot shows the boundary's band and red and green points.
func TestPlotInChromium(t *testing.T) {
	bin := chromium(t)
	res, err := Search(context.Background(), cfg(1, 2), threshold(map[int64]float64{1: 1.853, 2: 1.9}), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Record: "sweep", File: "04-stale-race.yaml", Run: "node-agent", Param: "client.idle_timeout", Unit: "s",
		Lo: 1, Hi: 2.5, Resolution: 0.05, Seeds: []int64{1, 2}, Check: "errors == 0", Metric: "errors", Requests: 1000,
		Prediction: &Prediction{Rule: "server idle − RTT", Bound: 1.85}}
	rec.Fill(res, geometry.Seconds)
	dir := t.TempDir()
	page := filepath.Join(dir, "plot.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := Plot(f, rec, geometry.Seconds); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	boundary := regexp.MustCompile(`<rect id="boundary-0" class="boundary" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindStringSubmatch(dom)
	if boundary == nil {
		t.Fatalf("no boundary in the DOM: %.400q", dom)
	}
	if n := strings.Count(dom, `<circle class="point `); n != len(rec.Steps) {
		t.Errorf("%d points drawn; the sweep has %d values", n, len(rec.Steps))
	}
	if !strings.Contains(dom, `id="prediction"`) {
		t.Error("no prediction line in the DOM")
	}
	if !strings.Contains(dom, "client.idle_timeout ≤ 1.84375s") {
		t.Errorf("the boundary's sentence is not on the page: %v", rec.Sentences)
	}

	shot := filepath.Join(dir, "shot.png")
	headless(t, bin, "--window-size=820,640", "--screenshot="+shot, "file://"+page)
	counts := colours(t, shot, map[string][3]uint32{"band": {0xff, 0xf1, 0xb8}, "safe": {0x1a, 0x7f, 0x37}, "unsafe": {0xcf, 0x22, 0x2e}})
	t.Logf("screenshot pixels: %v", counts)
	// The band is at least 2 units wide and 340 tall; the points are discs of radius 4.
	if counts["band"] < 500 || counts["safe"] < 100 || counts["unsafe"] < 100 {
		t.Errorf("screenshot %s: %v pixels of the band, safe and unsafe colours; want each drawn", shot, counts)
	}
}

// colours counts the pixels within a small distance of each named colour.
func colours(t *testing.T, path string, want map[string][3]uint32) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for name, c := range want {
				if near(r>>8, c[0]) && near(g>>8, c[1]) && near(bl>>8, c[2]) {
					out[name]++
				}
			}
		}
	}
	return out
}

func near(a, b uint32) bool { return a+8 >= b && b+8 >= a }
