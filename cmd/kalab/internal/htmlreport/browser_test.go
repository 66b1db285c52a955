package htmlreport

import (
	"context"
	"fmt"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/browsertest"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/rs/zerolog"
)

// The browser tests' Chromium (cmd/kalab/cmd/kalab/internal/browsertest).
var (
	chromium = browsertest.Chromium
	headless = browsertest.Headless
)

// A short stale-race run: the timing of the bundled 04-stale-race.yaml (time scale 0.1,
// 150 ms RTT, a 2 s idle close, bursts of 10, pauses of 1.5-2.5 s) over 300 requests,
// with a seed whose pauses race the close a few times.
const staleRace = `
name: stale-race
time_scale: 0.1
network: {rtt: 150ms}
server: {tls: true, idle_timeout: 2s, keepalive_hint: false}
client: {preset: node-agent}
load: {requests: 300, burst: 10, pause: 1.5s..2.5s, seed: 4}
`

var (
	tagRe  = regexp.MustCompile(`<(/?)([a-zA-Z]+)((?:\s+[^\s=>/]+(?:="[^"]*")?)*)\s*/?>`)
	attrRe = regexp.MustCompile(`([^\s=]+)="([^"]*)"`)
)

type element struct {
	name  string
	attrs map[string]string
	lane  string // data-conn of the lane it is drawn in
}

// elements lists the start tags of a serialized DOM with their attributes, noting for
// each the timeline lane (a <g class="lane">) that holds it.
func elements(dom string) []element {
	var out []element
	lane := ""
	for _, m := range tagRe.FindAllStringSubmatch(dom, -1) {
		if m[1] == "/" {
			if m[2] == "g" {
				lane = ""
			}
			continue
		}
		e := element{name: m[2], attrs: map[string]string{}}
		for _, a := range attrRe.FindAllStringSubmatch(m[3], -1) {
			e.attrs[a[1]] = html.UnescapeString(a[2])
		}
		if e.name == "g" && e.attrs["class"] == "lane" {
			lane = e.attrs["data-conn"]
		}
		e.lane = lane
		out = append(out, e)
	}
	return out
}

func num(t *testing.T, e element, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[attr], 64)
	if err != nil {
		t.Fatalf("<%s %v>: %s: %v", e.name, e.attrs, attr, err)
	}
	return v
}

// The report of a stale-race run on the virtual clock, rendered by Chromium: the DOM holds
// one lane per connection the client opened, one bar per request, one failed bar per error,
// and every failed bar sits within one RTT of the server's close of its connection (on the
// virtual clock no timer is late, so that holds exactly); the screenshot of the failure's
// neighbourhood is a picture, with failed bars painted in it.
func TestBrowserRendersStaleRaceReport(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "stale-race.yaml")
	if err := os.WriteFile(file, []byte(staleRace), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: filepath.Join(dir, "results"),
		KalabVersion: "test", Log: zerolog.Nop(), Parallel: 1, Host: runner.TestHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	run := out.Runs[0]
	if run.Clock != scenario.ClockVirtual {
		t.Fatalf("the run went on the %q clock, want virtual", run.Clock)
	}
	if run.Status != report.StatusPass {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	m := run.Metrics
	if m.Errors == 0 {
		t.Fatalf("the stale race produced no error in %v requests: nothing to check the failed bars with", m.Requests)
	}
	res, err := Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := WriteFile(page, res, Options{}); err != nil {
		t.Fatal(err)
	}

	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish (no data-ready on <body>); DOM starts %.300q", dom)
	}
	rtt := 150.0
	var lanes, bars, failed int
	closes := map[string][]float64{} // lane -> server close times
	var failures []element
	for _, e := range elements(dom) {
		cls := e.attrs["class"]
		switch {
		case e.name == "g" && cls == "lane":
			lanes++
		case e.name == "rect" && strings.HasPrefix(cls, "bar "):
			bars++
			if cls == "bar failed" {
				failed++
				failures = append(failures, e)
			}
		case e.name == "path" && cls == "mark srvclose":
			closes[e.lane] = append(closes[e.lane], num(t, e, "data-t"))
		}
	}
	t.Logf("DOM: %d lanes, %d bars, %d failed, %d lanes with server closes", lanes, bars, failed, len(closes))
	if lanes != int(m.Connections) || bars != int(m.Requests) || failed != int(m.Errors) {
		t.Errorf("DOM: %d lanes, %d bars, %d failed bars; the run: %v connections, %v requests, %v errors",
			lanes, bars, failed, m.Connections, m.Requests, m.Errors)
	}
	for _, f := range failures {
		start, end := num(t, f, "data-start"), num(t, f, "data-end")
		best := math.Inf(1)
		for _, c := range closes[f.lane] {
			// Distance from the close to the bar's interval (0 when the close falls inside it).
			best = min(best, max(start-c, c-end, 0))
		}
		if best > rtt {
			t.Errorf("failed request %s on lane %s (%.1f-%.1f ms): nearest server close on its lane %.1f ms away (closes %v); want within one RTT (%v ms)",
				f.attrs["data-seq"], f.lane, start, end, best, closes[f.lane], rtt)
		}
	}

	// The screenshot: the run alone, zoomed to three seconds around its first failure; the
	// frame ends above the charts, so the red in it is the failed bars (and the legend).
	first := failures[0]
	from, to := num(t, first, "data-start")-1500, num(t, first, "data-end")+1500
	shot := filepath.Join(dir, "shot.png")
	headless(t, bin, "--window-size=1200,440", "--virtual-time-budget=3000", "--screenshot="+shot,
		fmt.Sprintf("file://%s#run-stale-race--default@%.0f-%.0f", page, max(from, 0), to))
	checkScreenshot(t, shot)
}

// checkScreenshot decodes the PNG and requires a picture: many colours, most of the
// frame not background, and the failed bars' red painted.
func checkScreenshot(t *testing.T, path string) {
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
	colours := map[[3]uint32]int{}
	red := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint32{r >> 8, g >> 8, bl >> 8}
			colours[c]++
			if near(c, [3]uint32{0xd9, 0x2d, 0x20}) { // --failed
				red++
			}
		}
	}
	top := 0
	for _, n := range colours {
		top = max(top, n)
	}
	total := b.Dx() * b.Dy()
	if len(colours) < 50 || float64(top)/float64(total) > 0.9 {
		t.Errorf("screenshot %s looks blank: %d colours, the commonest covers %.0f%%", path, len(colours), 100*float64(top)/float64(total))
	}
	if red < 400 { // the legend's swatch alone is about 130
		t.Errorf("screenshot %s: %d pixels of the failed bars' red; want the failure drawn", path, red)
	}
	t.Logf("screenshot: %d colours, %d red pixels", len(colours), red)
}

func near(a, b [3]uint32) bool {
	d := func(x, y uint32) uint32 {
		if x > y {
			return x - y
		}
		return y - x
	}
	return d(a[0], b[0]) < 12 && d(a[1], b[1]) < 12 && d(a[2], b[2]) < 12
}
