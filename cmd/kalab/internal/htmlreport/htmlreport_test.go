package htmlreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// writeResults makes a results directory with one run of the given requests and server
// connections, kalab's closing invocation record, and a record kind this version does not know.
func writeResults(t *testing.T, reqs []report.Request, conns []report.Conn) string {
	t.Helper()
	dir := t.TempDir()
	run := report.Run{Record: "run", RecordVersion: 1, RunID: "r1", Scenario: "s", File: "s.yaml", Variant: "v",
		Params: json.RawMessage(`{"network":{"rtt":"100ms"},"load":{"burst":2,"pause":"1s..2s"}}`),
		Status: report.StatusPass, RequestsFile: report.RequestsPath("s", "v"),
		ConnectionsFile: report.ConnectionsPath("s", "v"), Checks: []report.Check{{Kind: "expect", Expr: "errors > 0", Pass: true}}}
	var b bytes.Buffer
	for _, v := range []any{run, map[string]any{"record": "invocation", "record_version": 1, "state": "ended", "completed": true,
		"runs_planned": 1, "runs_recorded": 1}, map[string]any{"record": "probe", "record_version": 1}} {
		line, _ := json.Marshal(v)
		b.Write(append(line, '\n'))
	}
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("results.jsonl", b.Bytes())
	b.Reset()
	for i, r := range reqs {
		line, _ := json.Marshal(r)
		if i == 0 {
			// A phase a newer kalab may add: drawn in the hover text, not an error.
			line = append(line[:len(line)-1], []byte(`,"queue_ms":1.5}`)...)
		}
		b.Write(append(line, '\n'))
	}
	write(run.RequestsFile, b.Bytes())
	b.Reset()
	for _, c := range conns {
		line, _ := json.Marshal(c)
		b.Write(append(line, '\n'))
	}
	write(run.ConnectionsFile, b.Bytes())
	return dir
}

func render(t *testing.T, dir string) string {
	t.Helper()
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func count(s, pattern string) int { return len(regexp.MustCompile(pattern).FindAllStringIndex(s, -1)) }

func TestTimelineDrawsEachRequestOnItsConnection(t *testing.T) {
	t.Parallel()
	closed := 950.0
	onTime, queued, at := 0.0, 20.0, 1080.0 // a scheduled request's queue wait: 0 is no phase
	reqs := []report.Request{
		{Seq: 0, StartMs: 0, LatencyMs: 300, Conn: 1, Attempts: 1, Status: 200, ConnectMs: 100, TLSMs: 100, FirstByteMs: 300},
		{Seq: 1, StartMs: 300, LatencyMs: 100, Conn: 1, Reused: true, Attempts: 1, Status: 200, FirstByteMs: 100,
			ScheduledMs: &onTime, QueueWaitMs: &onTime},
		// The race: sent 50 ms after the server closed connection 1, before the FIN arrived.
		{Seq: 2, StartMs: 1000, LatencyMs: 100, Conn: 1, Reused: true, Attempts: 1, Class: "reset", Error: `read: connection reset <by> "peer"`,
			ServerConn: 7, ServerClosedMs: &closed, ServerCloseReason: "idle"},
		{Seq: 3, StartMs: 1100, LatencyMs: 300, Conn: 2, Attempts: 2, Status: 200, FirstByteMs: 300, ScheduledMs: &at, QueueWaitMs: &queued},
		{Seq: 4, StartMs: 1400, LatencyMs: 100, Conn: 2, Reused: true, Attempts: 1, HiddenRetries: 1, Status: 200, FirstByteMs: 100},
		{Seq: 5, StartMs: 1500, LatencyMs: 1, Attempts: 1, Class: "refused", Error: "connect: refused"},
	}
	conns := []report.Conn{
		{Record: "conn", Side: "server", ID: 7, ClientConn: 1, OpenedMs: 50, ClosedMs: &closed, ClosedBy: "server", Reason: "idle", Requests: 2},
	}
	page := render(t, writeResults(t, reqs, conns))
	for _, c := range []struct {
		what, pattern string
		want          int
	}{
		{"lanes (client connections)", `<g class="lane" data-conn="\d+"`, 2},
		{"the lane of requests without a connection", `<g class="lane-none"`, 1},
		{"bars", `<rect class="bar `, 6},
		{"new bars", `class="bar new"`, 1},
		{"reused bars", `class="bar reused"`, 1},
		{"failed bars", `class="bar failed"`, 2},
		{"retried bars", `class="bar retried"`, 1},
		{"hidden re-send bars", `class="bar hidden"`, 1},
		{"server close marks", `class="mark srvclose"`, 1},
		{"FIN arrival marks", `class="mark fin" d="M[\d.]+ -1v14" data-t="1000"`, 1},
		{"the close on the failed bar", `data-sc="950,idle"`, 1},
		{"the unknown phase", `data-ph="100,100,300,queue=1.5"`, 1},
		{"the queue wait, a phase", `data-ph="0,0,300,queue_wait=20"`, 1},
		{"no queue wait on time", `data-ph="0,0,100"`, 2},
		{"the error text, escaped", `read: connection reset &lt;by&gt; &#34;peer&#34;`, 1},
		{"the unknown record kind, named", `not drawn: 1 &#34;probe&#34; record`, 1},
		{"kalab's own invocation record, not named", `invocation`, 0},
		{"a complete invocation, not called incomplete", `id="incomplete"`, 0},
		{"a passed check", `<li class="pass" data-verdict="pass"><code>errors &gt; 0</code>`, 1},
		{"the histogram", `<svg class="hist"`, 1},
		{"the phase chart", `<svg class="phases"`, 1},
	} {
		if n := count(page, c.pattern); n != c.want {
			t.Errorf("%s: %d matches of %s; want %d", c.what, n, c.pattern, c.want)
		}
	}
	if strings.Contains(page, "http://") && count(page, `(src|href)="https?://`) > 0 {
		t.Error("the page refers to something on the network")
	}
}

// Above timeline.MaxDrawn requests the lanes hold time buckets that still account for every request.
func TestLargeRunsAreAggregated(t *testing.T) {
	t.Parallel()
	const n = timeline.MaxDrawn + 2000
	reqs := make([]report.Request, n)
	for i := range reqs {
		reqs[i] = report.Request{Seq: i, StartMs: float64(i), LatencyMs: 5, Conn: uint64(i%3 + 1), Reused: i > 3, Attempts: 1, Status: 200}
	}
	reqs[500].Class, reqs[500].Status = "eof", 0
	page := render(t, writeResults(t, reqs, nil))
	if c := count(page, `<rect class="bar `); c != 0 {
		t.Errorf("%d bars drawn for %d requests; want buckets", c, n)
	}
	total := 0
	for _, m := range regexp.MustCompile(`class="bucket[^"]*"[^>]*data-n="(\d+)"`).FindAllStringSubmatch(page, -1) {
		var k int
		if _, err := fmt.Sscan(m[1], &k); err != nil {
			t.Fatal(err)
		}
		total += k
	}
	if total != n {
		t.Errorf("buckets hold %d requests; want %d", total, n)
	}
	if count(page, `class="bucket failed"`) != 1 {
		t.Error("want exactly one bucket marked failed")
	}
	if !strings.Contains(page, "more than 10000: each lane shows buckets of") {
		t.Error("the page does not say the timeline is aggregated")
	}
}

func TestWriteFileIsAtomicAndRefusesNonRegularTargets(t *testing.T) {
	t.Parallel()
	dir := writeResults(t, []report.Request{{Seq: 0, LatencyMs: 1, Conn: 1, Attempts: 1, Status: 200}}, nil)
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	target := filepath.Join(out, "report.html")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(target, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
		t.Errorf("target not replaced: %.40q", b)
	}
	if err := os.Mkdir(filepath.Join(out, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(out, "link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d", "link"} {
		if err := WriteFile(filepath.Join(out, name), res, Options{}); err == nil || !strings.Contains(err.Error(), "kalab writes only regular files") {
			t.Errorf("%s: err %v; want a refusal", name, err)
		}
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 3 {
		t.Errorf("%d entries in the target directory (a temporary file left?): %v", len(entries), entries)
	}
}

// A run compared with a baseline shows the baseline run's figures beside its own.
func TestBaselineFiguresAreLinked(t *testing.T) {
	t.Parallel()
	dir := writeResults(t, []report.Request{{Seq: 0, LatencyMs: 1, Conn: 1, Attempts: 1, Status: 200}}, nil)
	// A schema-valid baseline run: the committed baseline's first, renamed.
	committed, err := report.ReadFile(filepath.Join("..", "..", "..", "..", "results", "baseline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	base := committed.Runs[0]
	base.RunID, base.Scenario, base.Variant, base.Matrix = "b1", "s", "v", nil
	base.Metrics.Errors, base.Metrics.Requests = 7, 1
	line, _ := json.Marshal(base)
	basePath := filepath.Join(t.TempDir(), "baseline.jsonl")
	if err := os.WriteFile(basePath, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	res.Runs[0].Baseline = &report.BaselineRef{File: basePath, RunID: "b1", State: "compared"}
	if _, err := baseline.Load(basePath); err != nil {
		t.Fatal(err)
	}
	linkBaselines(res.Runs)
	if res.Runs[0].BaselineRun == nil {
		t.Fatal("baseline run not linked")
	}
	var out bytes.Buffer
	if err := Render(&out, res, Options{}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`<tr class="base"><td class="l">↳ baseline</td><td></td><td>1</td><td>7</td>.*v in run b1`).MatchString(out.String()) {
		t.Error("the baseline's figures are not on the page")
	}
}
