package htmlreport

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
	"github.com/kalab-dev/kalab/engine/report"
)

// suiteLike writes a results directory shaped like the bundled suite's: one run per run of
// the committed baseline, each with that run's requests, connections and errors.
func suiteLike(tb testing.TB) string {
	tb.Helper()
	base, err := report.ReadFile(filepath.Join("..", "..", "..", "..", "results", "baseline.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	w, err := report.Create(dir, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	for i := range base.Runs {
		run := base.Runs[i]
		n, c, e := int(run.Metrics.Requests), max(int(run.Metrics.Connections), 1), int(run.Metrics.Errors)
		rw, err := w.Requests(run.Scenario, run.Variant)
		if err != nil {
			tb.Fatal(err)
		}
		var conns []report.Conn
		prev := uint64(0)
		for k := 0; k < n; k++ {
			conn := uint64(k*c/n) + 1
			r := report.Request{Seq: k, StartMs: float64(k) * 20, LatencyMs: 150, Conn: conn, Reused: conn == prev,
				Attempts: 1, Status: 200, Bytes: 200, FirstByteMs: 150}
			if !r.Reused {
				r.ConnectMs, r.TLSMs, r.FirstByteMs, r.LatencyMs = 150, 150, 450, 450
				at := float64(k) * 20
				conns = append(conns, report.Conn{Side: "server", ID: conn, ClientConn: conn, OpenedMs: at,
					ClosedMs: &at, ClosedBy: "server", Reason: "idle", Requests: 1})
			}
			if e > 0 && k%(n/e+1) == n/e {
				r.Class, r.Error, r.Status = "eof", "wait for response on connection: EOF", 0
			}
			rw.Write(&r)
			prev = conn
		}
		if err := rw.Close(); err != nil {
			tb.Fatal(err)
		}
		if err := w.WriteConns(run.Scenario, run.Variant, conns); err != nil {
			tb.Fatal(err)
		}
		run.RequestsFile = report.RequestsPath(run.Scenario, run.Variant)
		run.ConnectionsFile = report.ConnectionsPath(run.Scenario, run.Variant)
		if err := w.WriteRun(&run); err != nil {
			tb.Fatal(err)
		}
	}
	return w.Dir
}

// BenchmarkRenderSuite loads and renders a results directory shaped like the bundled
// suite's (33 runs, 25,370 requests, 11,000 connections); the README's figure for the real
// suite is measured with kalab report.
func BenchmarkRenderSuite(b *testing.B) {
	dir := suiteLike(b)
	out := filepath.Join(b.TempDir(), "report.html")
	for b.Loop() {
		res, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteFile(out, res, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	fi, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/1e6, "MB/report")
}

// The synthetic suite draws every request and connection of the baseline's runs.
func TestSuiteLikeReportDrawsEveryRequest(t *testing.T) {
	t.Parallel()
	dir := suiteLike(t)
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, r := range res.Runs {
		want += int(r.Metrics.Requests)
	}
	path := filepath.Join(t.TempDir(), "r.html")
	if err := WriteFile(path, res, Options{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bars, painted := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	sc.Split(bufio.ScanWords)
	for sc.Scan() {
		w := sc.Text()
		if w == `class="bar` {
			bars++
		}
		// A run of many lanes is painted from its requests as data (timeline/canvas.go).
		if data, ok := strings.CutPrefix(w, `class="tldata">`); ok {
			var d timeline.CanvasData
			data, _, _ = strings.Cut(data, "</script>")
			if err := json.Unmarshal([]byte(data), &d); err != nil {
				t.Fatalf("canvas data: %v", err)
			}
			painted += len(d.R) / 5
		}
	}
	if bars+painted != want {
		t.Errorf("%d bars and %d requests painted on canvases for %d requests", bars, painted, want)
	}
}
