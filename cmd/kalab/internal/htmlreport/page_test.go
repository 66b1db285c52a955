package htmlreport

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/explain"
	"github.com/kalab-dev/kalab/engine/report"
)

// fixtureRun is a run record with the request lines written beside it.
type fixtureRun struct {
	run  report.Run
	reqs []report.Request
	// hidden: the lines are on disk where the runner puts them, but the record names no
	// file (a run without a verdict).
	hidden bool
}

// The suite the page tests draw, in the order its runs completed: file 02-b.yaml's
// scenario finished first; the invocation was killed after 4 of its 5 runs (no closing
// invocation record). Scenario a's model run holds the stale race both ways round: request
// 2 left 50 ms after the server's idle close of its connection (the close came first), and
// request 6 left 100 ms before a close that then reset it.
func suiteFixture() []fixtureRun {
	closedBefore, closedAfter := 950.0, 2100.0
	run := func(scen, file, variant, status string, n, errs float64) report.Run {
		return report.Run{Record: "run", RecordVersion: 1, RunID: "r1", Scenario: scen, File: file, Variant: variant,
			Params: json.RawMessage(`{"network":{"rtt":"100ms"}}`), Status: status,
			Metrics: check.Metrics{Requests: n, Errors: errs, Connections: 2}}
	}
	pass := report.Check{Kind: "expect", Expr: "requests > 0", Pass: true, File: "x.yaml", Line: 3, Col: 5}
	model := run("a", "scenarios/01-a.yaml", "model", report.StatusPass, 7, 2)
	model.Checks = []report.Check{pass}
	real := run("a", "scenarios/01-a.yaml", "real", report.StatusFail, 1, 0)
	real.Checks = []report.Check{{Kind: "expect", Expr: "errors == 1", Observed: map[string]float64{"errors": 0}, File: "x.yaml", Line: 9, Col: 7}}
	noisy := run("a", "scenarios/01-a.yaml", "noisy", report.StatusError, 2, 0)
	noisy.Error = "noisy: link p99 lateness 31 ms over its 5 ms tolerance"
	noisy.Timing = &report.Timing{Noisy: true, Reason: "link p99 lateness 31 ms over its 5 ms tolerance", Attempt: 1}
	b := run("b", "scenarios/02-b.yaml", "v", report.StatusPass, 1, 0)
	b.Checks = []report.Check{pass}
	return []fixtureRun{
		{run: b, reqs: []report.Request{{Seq: 0, LatencyMs: 300, Conn: 1, Attempts: 1, Status: 200}}},
		{run: model, reqs: []report.Request{
			{Seq: 0, StartMs: 0, LatencyMs: 300, Conn: 1, Attempts: 1, Status: 200},
			{Seq: 1, StartMs: 300, LatencyMs: 100, Conn: 1, Reused: true, Attempts: 1, Status: 200},
			{Seq: 2, StartMs: 1000, LatencyMs: 100, Conn: 1, Reused: true, Attempts: 1, Class: "reset", Error: "connection reset by peer",
				ServerConn: 1, ServerClosedMs: &closedBefore, ServerCloseReason: "idle"},
			{Seq: 3, StartMs: 1100, LatencyMs: 300, Conn: 2, Attempts: 2, Status: 200},
			{Seq: 4, StartMs: 1400, LatencyMs: 100, Conn: 2, Reused: true, Attempts: 1, HiddenRetries: 1, Status: 200},
			{Seq: 5, StartMs: 1500, LatencyMs: 100, Conn: 2, Reused: true, Attempts: 1, Status: 200},
			{Seq: 6, StartMs: 2000, LatencyMs: 150, Conn: 2, Reused: true, Attempts: 1, Class: "eof", Error: "EOF",
				ServerConn: 2, ServerClosedMs: &closedAfter, ServerCloseReason: "idle"},
		}},
		{run: noisy, hidden: true, reqs: []report.Request{
			{Seq: 0, StartMs: 0, LatencyMs: 300, Conn: 1, Attempts: 1, Status: 200},
			{Seq: 1, StartMs: 400, LatencyMs: 100, Conn: 1, Reused: true, Attempts: 1, Status: 200},
		}},
		{run: real, reqs: []report.Request{{Seq: 0, LatencyMs: 300, Conn: 1, Attempts: 1, Status: 200}}},
	}
}

// writeFixture writes runs as kalab run would, after the invocation's opening record,
// and scenario a's record with a compare that could not be evaluated.
func writeFixture(t *testing.T, runs []fixtureRun, closing bool) string {
	t.Helper()
	dir := t.TempDir()
	var lines [][]byte
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	add(report.Invocation{Record: "invocation", RecordVersion: 1, RunID: "r1", State: report.InvocationStarted, Planned: 5})
	for _, fr := range runs {
		p := report.RequestsPath(fr.run.Scenario, fr.run.Variant)
		if !fr.hidden {
			fr.run.RequestsFile = p
		}
		var b []byte
		for _, r := range fr.reqs {
			l, _ := json.Marshal(r)
			b = append(append(b, l...), '\n')
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
		add(fr.run)
	}
	add(report.Scenario{Record: "scenario", RecordVersion: 1, RunID: "r1", Scenario: "a", File: "scenarios/01-a.yaml", Runs: 3,
		Status: report.StatusNotEvaluated, Checks: []report.Check{{Kind: "compare", Expr: "variant('real').errors == variant('noisy').errors",
			NotEvaluated: "variant noisy did not complete", File: "scenarios/01-a.yaml", Line: 20, Col: 3}}})
	if closing {
		add(report.Invocation{Record: "invocation", RecordVersion: 1, RunID: "r1", State: report.InvocationEnded, Completed: true, Planned: 4, Recorded: 4})
	}
	var all []byte
	for _, l := range lines {
		all = append(append(all, l...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), all, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fixturePage renders the fixture into dir/report.html.
func fixturePage(t *testing.T, closing bool) string {
	t.Helper()
	return renderPage(t, writeFixture(t, suiteFixture(), closing))
}

// renderPage loads the results in dir and writes their page to dir/report.html.
func renderPage(t *testing.T, dir string) string {
	t.Helper()
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := WriteFile(page, res, Options{}); err != nil {
		t.Fatal(err)
	}
	return page
}

var probeRe = regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`)

// probe opens page (with hash) in Chromium with script appended after the page's own:
// the script drives the page as a user would (events on its elements) and returns an
// object, which probe decodes into out. It returns the DOM as Chromium left it.
func probe(t *testing.T, page, hash, script string, out any) string {
	t.Helper()
	bin := chromium(t)
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	inject := `<script>(function(){var out=(function(){` + script + `})();` +
		`var p=document.createElement("pre");p.id="probe";p.textContent=JSON.stringify(out);document.body.appendChild(p);})();</script></body>`
	driven := filepath.Join(filepath.Dir(page), "probe-"+strings.ReplaceAll(t.Name(), "/", "-")+".html")
	if err := os.WriteFile(driven, []byte(strings.Replace(string(src), "</body>", inject, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, bin, "--dump-dom", "file://"+driven+hash))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish (no data-ready on <body>); DOM starts %.300q", dom)
	}
	m := probeRe.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe script did not finish (no <pre id=probe>); DOM ends %.600q", dom[max(0, len(dom)-600):])
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), out); err != nil {
		t.Fatalf("probe result %q: %v", m[1], err)
	}
	return dom
}

// The hover text of a failed request places the server's close of its connection on the
// right side of the request's start: 50 ms before request 2 started, 100 ms after request
// 6 started (the page once said "-100 ms before").
func TestBrowserCloseTooltipSaysBeforeOrAfter(t *testing.T) {
	t.Parallel()
	var got struct{ Before, After string }
	probe(t, fixturePage(t, true), "", `
function tip(seq){var b=document.querySelector('#run-a--model rect.bar[data-seq="'+seq+'"]'),r=b.getBoundingClientRect();
  b.dispatchEvent(new MouseEvent("mousemove",{bubbles:true,clientX:r.left+1,clientY:r.top+1}));
  return document.getElementById("tip").textContent;}
return {before:tip(2),after:tip(6)};`, &got)
	for _, c := range []struct{ text, want string }{
		{got.Before, "the server closed this connection (idle) at 950 ms, 50.0 ms before the request started"},
		{got.After, "the server closed this connection (idle) at 2100 ms, 100 ms after the request started"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("hover text %q; want it to say %q", c.text, c.want)
		}
	}
}

// A killed invocation (no closing record) says so in the header; a complete one does not;
// neither names kalab's own invocation records as records it could not draw.
func TestBrowserHeaderSaysIncomplete(t *testing.T) {
	t.Parallel()
	type head struct{ Incomplete, Header string }
	for _, closing := range []bool{false, true} {
		var got head
		probe(t, fixturePage(t, closing), "", `
var i=document.getElementById("incomplete");
return {incomplete:i?i.textContent:"",header:document.querySelector("header").textContent};`, &got)
		want := ""
		if !closing {
			want = "incomplete: 4 of 5 runs recorded, 0 interrupted; the process ended without a closing record (killed?)"
		}
		if got.Incomplete != want {
			t.Errorf("closing record %v: the header says %q; want %q", closing, got.Incomplete, want)
		}
		if strings.Contains(got.Header, "not drawn") || strings.Contains(got.Header, "invocation") {
			t.Errorf("closing record %v: the header names records it did not draw: %q", closing, got.Header)
		}
	}
}

// Sections follow the scenario files (01-a before 02-b), not the order the runs completed
// in (b first); the noisy run, whose record names no request file, is drawn from the file
// it left, with no claim that there is none.
func TestBrowserSectionsInFileOrderAndNoisyRunDrawn(t *testing.T) {
	t.Parallel()
	var got struct {
		Sections   []string
		NoisyBars  int
		NoisyNotes string
	}
	probe(t, fixturePage(t, true), "", `
var run=document.getElementById("run-a--noisy");
return {sections:[].map.call(document.querySelectorAll("section.scenario"),function(s){return s.id;}),
  noisyBars:run.querySelectorAll("rect.bar").length,noisyNotes:run.textContent};`, &got)
	if strings.Join(got.Sections, ",") != "s-a,s-b" {
		t.Errorf("sections %v; want s-a,s-b (file order)", got.Sections)
	}
	if got.NoisyBars != 2 {
		t.Errorf("the noisy run draws %d bars; want its 2 requests", got.NoisyBars)
	}
	if strings.Contains(got.NoisyNotes, "no request file") || !strings.Contains(got.NoisyNotes, "its requests are drawn from requests/a/noisy.jsonl") {
		t.Errorf("the noisy run's notes: %q", got.NoisyNotes)
	}
}

// The summary counts the fixture's runs and checks, and lists, with links, the failed run's
// failed check (once), the noisy run and the compare that was not evaluated; a link opens
// the run it points to.
func TestBrowserSummaryTotalsAndFailures(t *testing.T) {
	t.Parallel()
	var got struct {
		Totals   map[string]string
		Failures []string
		Opened   bool
	}
	probe(t, fixturePage(t, true), "", `
var tot={};document.querySelectorAll("[data-total]").forEach(function(td){tot[td.getAttribute("data-total")]=td.textContent;});
var fs=[].map.call(document.querySelectorAll(".failures li"),function(li){return li.getAttribute("data-kind")+" "+li.querySelector("a").getAttribute("href");});
var real=document.getElementById("run-a--real");real.open=false;
document.querySelector('.failures a[href="#run-a--real"]').click();
return {totals:tot,failures:fs,opened:real.open};`, &got)
	want := map[string]string{"runs": "4", "passed": "2", "failed": "1", "no-verdict": "1", "noisy": "1", "not-run": "0",
		"checks": "4", "checks-failed": "1", "not-evaluated": "1", "requests": "11", "errors": "2"}
	for k, v := range want {
		if got.Totals[k] != v {
			t.Errorf("total %s = %q; want %s", k, got.Totals[k], v)
		}
	}
	// The failed run is listed once, by its failed check: not again as a run.
	wantF := []string{"noisy #run-a--noisy", "fail #run-a--real", "not-evaluated #s-a"}
	if strings.Join(got.Failures, "|") != strings.Join(wantF, "|") {
		t.Errorf("failures panel %q; want %q", got.Failures, wantF)
	}
	if !got.Opened {
		t.Error("the failure's link did not open its run")
	}
}

// stepScript clicks a run's next and previous buttons and returns, after each click, the
// request whose facts are shown and whether its bar is inside the timeline's window.
const stepScript = `
var run=document.getElementById("run-a--model"),svg=run.querySelector("svg.timeline"),out=[];
function click(act){run.querySelector(".tlbox").zoomTo(0,100); // away from every request: the step must pan
  run.querySelector('button[data-act="'+act+'"]').click();
  var seq=run.querySelector("pre.facts").getAttribute("data-seq"),b=svg.querySelector('rect.bar[data-seq="'+seq+'"]');
  var vb=svg.getAttribute("viewBox").split(" ").map(Number),x=+b.getAttribute("x");
  out.push({seq:+seq,inView:x>=vb[0]&&x<=vb[0]+vb[2],focus:b.classList.contains("focus"),facts:run.querySelector("pre.facts").textContent});}
["next","next","next","next","next","prev","prev"].forEach(click);
return out;`

// Next and previous step through the failed, retried and re-sent requests in time order
// (2 failed, 3 retried, 4 re-sent, 6 failed, then round again), pan the timeline to each,
// outline it and show its facts.
func TestBrowserNextPreviousFailure(t *testing.T) {
	t.Parallel()
	var got []struct {
		Seq           int
		InView, Focus bool
		Facts         string
	}
	probe(t, fixturePage(t, true), "", stepScript, &got)
	want := []int{2, 3, 4, 6, 2, 6, 4}
	if len(got) != len(want) {
		t.Fatalf("%d steps; want %d", len(got), len(want))
	}
	for i, g := range got {
		if g.Seq != want[i] || !g.InView || !g.Focus {
			t.Errorf("step %d: request %d (in view %v, outlined %v); want request %d in view, outlined", i+1, g.Seq, g.InView, g.Focus, want[i])
		}
	}
	if f := got[0].Facts; !strings.HasPrefix(f, "1 of 4\nrequest #2 · connection 1 · failed on a reused connection") ||
		!strings.Contains(f, "50.0 ms before the request started") {
		t.Errorf("facts of the first failure: %q", f)
	}
	// Below the facts, the paragraph kalab explain prints for that request.
	why := explainedSeq(t, 2)
	if !strings.HasSuffix(got[0].Facts, "\n\n"+why) {
		t.Errorf("facts of the first failure do not end with kalab explain's paragraph %q:\n%q", why, got[0].Facts)
	}
}

// explainedSeq is kalab explain's paragraph for request seq of the fixture's run a/model.
func explainedSeq(t *testing.T, seq int) string {
	t.Helper()
	run, err := explain.Load(writeFixture(t, suiteFixture(), true), "a/model")
	if err != nil {
		t.Fatal(err)
	}
	text, ok := explain.Request(run, seq)
	if !ok || text == "" {
		t.Fatalf("kalab explain has no paragraph for request %d", seq)
	}
	return text
}

// filterScript sets a run's filters as a user would and counts the bars and lanes shown.
const filterScript = `
var run=document.getElementById("run-a--model");
function set(f,v){var el=run.querySelector('[data-f="'+f+'"]');el.value=v;el.dispatchEvent(new Event(el.tagName==="INPUT"?"input":"change"));}
function seen(){
  var bars=[].filter.call(run.querySelectorAll("rect.bar"),function(b){return b.style.display!=="none";}).map(function(b){return +b.getAttribute("data-seq");});
  var lanes=[].filter.call(run.querySelectorAll("g.lane"),function(g){return g.style.display!=="none";}).length;
  return {bars:bars,lanes:lanes,count:run.querySelector(".fcount").textContent,hash:decodeURIComponent(location.hash)};}
var out={};
set("kind","failed");out.failed=seen();
set("class","eof");out.eof=seen();
set("kind","");set("class","");set("q","c1");out.conn=seen();
set("q","4");out.req=seen();out.req.facts=run.querySelector("pre.facts").getAttribute("data-seq");
return out;`

type seen struct {
	Bars        []int
	Lanes       int
	Count, Hash string
	Facts       string
}

// The filters show only the requests that match (failed: 2 and 6 on both lanes; error
// class eof: 6 alone; connection c1: 0, 1 and 2) and fold the lanes left empty; a request
// number shows that request's facts; the URL keeps the filters.
func TestBrowserFilterAndSearch(t *testing.T) {
	t.Parallel()
	var got map[string]seen
	probe(t, fixturePage(t, true), "", filterScript, &got)
	for _, c := range []struct {
		step  string
		bars  string
		lanes int
		hash  string
	}{
		{"failed", "[2 6]", 2, ";kind=failed"},
		{"eof", "[6]", 1, ";kind=failed;class=eof"},
		{"conn", "[0 1 2]", 1, ";q=c1"},
		{"req", "[0 1 2 3 4 5 6]", 2, ";q=4;req=4"},
	} {
		g := got[c.step]
		if jsonInts(g.Bars) != c.bars || g.Lanes != c.lanes || !strings.HasSuffix(g.Hash, c.hash) {
			t.Errorf("%s: bars %v on %d lanes, hash %q; want bars %s on %d lanes, hash ending %q", c.step, g.Bars, g.Lanes, g.Hash, c.bars, c.lanes, c.hash)
		}
	}
	if got["failed"].Count != "2 of 7 requests" {
		t.Errorf("the failed filter's count: %q", got["failed"].Count)
	}
	if got["req"].Facts != "4" {
		t.Errorf("searching request 4 shows the facts of request %q", got["req"].Facts)
	}
}

func jsonInts(v []int) string {
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(string(b), ",", " ")
}

// A deep link restores the filters and the request in view: the run shown alone, the
// filter's menus set, only the matching requests drawn, the linked request outlined.
func TestBrowserDeepLinkKeepsFilters(t *testing.T) {
	t.Parallel()
	page := fixturePage(t, true)
	const script = `
var run=document.getElementById("run-a--model"),f=run.querySelector("pre.facts");
return {bars:[].filter.call(run.querySelectorAll("rect.bar"),function(b){return b.style.display!=="none";}).map(function(b){return +b.getAttribute("data-seq");}),
  kind:run.querySelector('[data-f="kind"]').value,cls:run.querySelector('[data-f="class"]').value,
  facts:f.hidden?"":f.getAttribute("data-seq"),summary:document.getElementById("summary").style.display,
  focus:[].map.call(run.querySelectorAll("rect.bar.focus"),function(b){return +b.getAttribute("data-seq");})};`
	var got struct {
		Bars, Focus               []int
		Kind, Cls, Facts, Summary string
	}
	probe(t, page, "#run-a--model@0-2500;kind=failed;class=eof", script, &got)
	if jsonInts(got.Bars) != "[6]" || got.Kind != "failed" || got.Cls != "eof" || got.Summary != "none" {
		t.Errorf("#…;kind=failed;class=eof: bars %v, menus %q %q, summary display %q; want bar 6, failed, eof, the run alone",
			got.Bars, got.Kind, got.Cls, got.Summary)
	}
	probe(t, page, "#run-a--model@0-2500;req=3", script, &got)
	if got.Facts != "3" || jsonInts(got.Focus) != "[3]" || len(got.Bars) != 7 {
		t.Errorf("#…;req=3: facts of %q, outlined %v, %d bars shown; want request 3's, 3, 7", got.Facts, got.Focus, len(got.Bars))
	}
}

// With the plan's order, runs follow it (variants too); without, scenarios go by file.
func TestPlanOrder(t *testing.T) {
	t.Parallel()
	mk := func(s, f, v string) *RunData {
		return &RunData{Run: report.Run{Scenario: s, File: f, Variant: v}}
	}
	runs := []*RunData{mk("b", "1.yaml", "v"), mk("a", "2.yaml", "y"), mk("a", "2.yaml", "x")}
	names := func(rs []*RunData) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Scenario+"/"+r.Variant)
		}
		return strings.Join(out, " ")
	}
	if got := names(planOrder(runs, nil)); got != "b/v a/y a/x" {
		t.Errorf("without the plan: %s; want b/v a/y a/x (file 1 first, then as recorded)", got)
	}
	order := []RunKey{{"a", "x"}, {"a", "y"}, {"b", "v"}}
	if got := names(planOrder(runs, order)); got != "a/x a/y b/v" {
		t.Errorf("with the plan: %s; want a/x a/y b/v", got)
	}
}

// The report is written with the mode of every file kalab writes (0664 less the umask),
// so a group that reads the results reads the report: not os.CreateTemp's 0600.
func TestReportFileMode(t *testing.T) {
	t.Parallel()
	page := fixturePage(t, true)
	// The umask as the process has it: a file created 0666 keeps what it lets through.
	probe := filepath.Join(t.TempDir(), "umask")
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	pst, err := os.Stat(probe)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	if want := atomicfile.Mode & pst.Mode().Perm(); st.Mode().Perm() != want {
		t.Errorf("report.html is %v; want %v (0664 less the umask)", st.Mode().Perm(), want)
	}
}
