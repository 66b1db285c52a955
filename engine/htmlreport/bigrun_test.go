package htmlreport

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// writeBigRun writes a results directory of one run of n requests over lanes keep-alive
// connections, shaped as manyLanes (a pause longer than the server's idle timeout in the
// middle of each lane; on every 97th lane the request after it fails, reset 40 ms after the
// server's close), with the request lines encoded by hand so that a million take about a
// second. It returns the directory and the number of failed requests.
func writeBigRun(tb testing.TB, lanes, n int) (string, int) {
	tb.Helper()
	dir := tb.TempDir()
	run := report.Run{Record: "run", RecordVersion: 1, RunID: "big", Scenario: "s", File: "s.yaml", Variant: "v",
		Status: report.StatusPass, RequestsFile: report.RequestsPath("s", "v")}
	run.Metrics.Requests, run.Metrics.Connections = float64(n), float64(lanes)
	w, err := report.Create(dir, "big")
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(w.Dir, run.RequestsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	perLane, failed, seq := n/lanes, 0, 0
	var b []byte
	for c := 0; c < lanes; c++ {
		at := float64(c*37%6000) * 10
		k := perLane
		if c < n%lanes {
			k++
		}
		for i := 0; i < k; i++ {
			start, lat := at, 100.0
			if i == 0 {
				lat = 300
			}
			fail := false
			if i == k/2 {
				start += 2300
				fail = c%97 == 0
			}
			b = append(b[:0], `{"seq":`...)
			b = strconv.AppendInt(b, int64(seq), 10)
			b = append(b, `,"start_ms":`...)
			b = strconv.AppendFloat(b, start, 'f', -1, 64)
			b = append(b, `,"latency_ms":`...)
			b = strconv.AppendFloat(b, lat, 'f', -1, 64)
			b = append(b, `,"conn":`...)
			b = strconv.AppendInt(b, int64(c+1), 10)
			b = append(b, `,"reused":`...)
			b = strconv.AppendBool(b, i > 0)
			if fail {
				failed++
				b = append(b, `,"attempts":1,"status":0,"bytes":0,"class":"reset","error":"connection reset by peer","server_closed_ms":`...)
				b = strconv.AppendFloat(b, start-40, 'f', -1, 64)
				b = append(b, `,"server_close_reason":"idle"}`...)
			} else {
				b = append(b, `,"attempts":1,"status":200,"bytes":200}`...)
			}
			b = append(b, '\n')
			bw.Write(b)
			seq++
			at = start + lat + 5
		}
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	run.Metrics.Errors = float64(failed)
	if err := w.WriteRun(&run); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return w.Dir, failed
}

// peakRSS is the process's peak resident set (VmHWM) in MB.
func peakRSS(tb testing.TB) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			var kb float64
			fmt.Sscanf(string(bytes.TrimSpace(v)), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkReportBigRun writes the report of one run of 10,000, 100,000 or 1,000,000
// requests over 2,000 connections and reports the process's peak RSS, from loading to the
// written page (run each size alone, -benchtime 1x, so that the peak is its own):
//
//	go test -run XXX -bench 'ReportBigRun/1000000$' -benchtime 1x ./engine/htmlreport/
func BenchmarkReportBigRun(b *testing.B) {
	for _, n := range []int{10000, 100000, 1000000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			dir, _ := writeBigRun(b, 2000, n)
			runtime.GC()
			before := peakRSS(b)
			out := filepath.Join(b.TempDir(), "report.html")
			for b.Loop() {
				t0 := time.Now()
				res, err := Load(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := WriteFile(out, res, Options{}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(t0).Seconds(), "s/report")
			}
			fi, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(peakRSS(b), "MB-peak-RSS")
			b.ReportMetric(before, "MB-RSS-before")
			b.ReportMetric(float64(fi.Size())/1e6, "MB/report")
		})
	}
}
