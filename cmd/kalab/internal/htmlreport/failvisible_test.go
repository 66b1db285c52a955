package htmlreport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// runBundledVariant runs one variant of a bundled scenario file on the virtual clock, its
// load.requests replaced by requests when not 0, and returns the results directory and the
// run's record.
func runBundledVariant(t *testing.T, file, variant string, requests int) (string, *report.Run) {
	t.Helper()
	src, err := os.ReadFile("../../../../scenarios/" + file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if requests > 0 {
		re := regexp.MustCompile(`(?m)^  requests: \d+$`)
		if !re.MatchString(text) {
			t.Fatalf("%s has no load.requests line to replace", file)
		}
		text = re.ReplaceAllString(text, fmt.Sprintf("  requests: %d", requests))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Execute(context.Background(), plan, runner.Options{Out: filepath.Join(dir, "results"), KalabVersion: "test",
		Log: zerolog.Nop(), Parallel: 1, Host: runner.TestHost(t), Filter: regexp.MustCompile("/" + variant + "$")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 || out.Runs[0].Clock != scenario.ClockVirtual {
		t.Fatalf("%d runs of %s/%s, want one on the virtual clock", len(out.Runs), file, variant)
	}
	return out.Dir, out.Runs[0]
}

// redScript opens the page's first run and counts the canvas's red pixels (the failed
// colour, #d92d20): at the whole run's zoom, after next ▶, after show: failed, and after
// next ▶ again; with the lanes drawn and their height after next ▶.
const redScript = `
var run=document.querySelector("details.run");run.open=true;
var box=run.querySelector(".tlbox.canvas"),cv=box.querySelector("canvas");box.draw();
function red(){var d=cv.getContext("2d").getImageData(0,0,cv.width,cv.height).data,n=0;
  for(var i=0;i<d.length;i+=4)if(Math.abs(d[i]-217)<24&&Math.abs(d[i+1]-45)<30&&Math.abs(d[i+2]-32)<30&&d[i+3]>200)n++;return n;}
var o={whole:red()};
run.querySelector('button[data-act="next"]').click();
o.next=red();o.height=cv.height;o.facts=run.querySelector("pre.facts").textContent;
var sel=run.querySelector('select[data-f="kind"]');sel.value="failed";sel.dispatchEvent(new Event("change"));
run.querySelector('button[data-act="next"]').click();
o.failedNext=red();o.failedFacts=run.querySelector("pre.facts").textContent;
return o;`

type redCounts struct {
	Whole, Next, Height, FailedNext int
	Facts, FailedFacts              string
}

// checkRed judges a canvas run's red pixels: failures visible at the whole run's zoom, and
// after next ▶ (alone and with show: failed) the failed request drawn red, at least FMIN
// (3) pixels each way.
func checkRed(t *testing.T, what string, got redCounts, failed int) {
	t.Helper()
	t.Logf("%s: %d red pixels at the whole run's zoom, %d after next ▶ (canvas %d px high), %d after show: failed and next ▶",
		what, got.Whole, got.Next, got.Height, got.FailedNext)
	if got.Whole < 9 {
		t.Errorf("%s: %d red pixels at the whole run's zoom; its %d failures must show", what, got.Whole, failed)
	}
	if got.Next < 9 || got.FailedNext < 9 {
		t.Errorf("%s: after next ▶ %d red pixels, with show: failed %d; want the failed request drawn (at least 3×3)", what, got.Next, got.FailedNext)
	}
	want := fmt.Sprintf("1 of %d\nrequest #", failed)
	if !strings.HasPrefix(got.Facts, want) || !strings.HasPrefix(got.FailedFacts, want) {
		t.Errorf("%s: next ▶ shows %q, then %q; want the first of %d failures", what, got.Facts, got.FailedFacts, failed)
	}
}

// File 04's node-agent at 100,000 requests (1,528 failures on 6,532 connections, virtual):
// the canvas shows its failures at every zoom.
func TestBrowserFailuresVisibleAt100000(t *testing.T) {
	if raceDetector {
		t.Skip("not under -race: the plain test pass runs the browser test") // skip: -race only: CI's plain pass runs it
	}
	chromium(t)
	dir, rec := runBundledVariant(t, "04-stale-race.yaml", "node-agent", 100000)
	if rec.Metrics.Errors != 1528 || rec.Metrics.Connections != 6532 {
		t.Fatalf("the run measured %v errors on %v connections; the plan gives 1528 on 6532", rec.Metrics.Errors, rec.Metrics.Connections)
	}
	var got redCounts
	probe(t, renderPage(t, dir), "", redScript, &got)
	checkRed(t, "100,000 requests", got, 1528)
	// Request 10 and the lane after it are all that is in view after next ▶: the other
	// 6,530 lanes fold away and the two left are drawn 24 pixels high.
	if got.Height != 48 {
		t.Errorf("after next ▶ the canvas is %d px high; want the two lanes in view, 24 px each", got.Height)
	}
	if !strings.Contains(got.Facts, "Request 10 failed with eof") || !strings.Contains(got.Facts, "node-agent does not retry") {
		t.Errorf("next ▶ at 100,000 requests shows no explanation:\n%s", got.Facts)
	}
}

// A million requests on 2,000 connections (writeBigRun): the same at the largest size the
// report is measured at.
func TestBrowserFailuresVisibleAtAMillion(t *testing.T) {
	if raceDetector {
		t.Skip("not under -race: the plain test pass runs the browser test") // skip: -race only: CI's plain pass runs it
	}
	chromium(t)
	dir, failed := writeBigRun(t, 2000, 1000000)
	var got redCounts
	probe(t, renderPage(t, dir), "", redScript, &got)
	checkRed(t, "1,000,000 requests", got, failed)
}

// File 04's node-agent (15 failures among 1,000 requests on 57 connections): at the whole
// run's zoom each failed bar is at least 3 pixels wide and on top where it is drawn.
func TestBrowserFailuresVisibleAtWholeZoom(t *testing.T) {
	t.Parallel()
	dir, rec := runBundledVariant(t, "04-stale-race.yaml", "node-agent", 0)
	var got []struct {
		W   float64
		Top bool
	}
	probe(t, renderPage(t, dir), "", `
var run=document.querySelector("details.run");run.open=true;run.querySelector(".tlbox").zoomTo(0,1e12);
return [].map.call(run.querySelectorAll("svg.timeline rect.bar.failed"),function(b){
  var r=b.getBoundingClientRect();b.scrollIntoView({block:"center"});r=b.getBoundingClientRect();
  return {w:r.width,top:document.elementFromPoint(r.left+r.width/2,r.top+r.height/2)===b};});`, &got)
	if len(got) != int(rec.Metrics.Errors) || len(got) != 15 {
		t.Fatalf("%d failed bars; the run has %v errors, the plan 15", len(got), rec.Metrics.Errors)
	}
	for i, g := range got {
		if g.W < 2.9 || !g.Top {
			t.Errorf("failed bar %d: %.2f px wide, on top %v; want at least 3 px, on top", i, g.W, g.Top)
		}
	}
}
