package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
)

func sampleRun() *Run {
	return &Run{
		KalabVersion: "test", RunID: "r1", Scenario: "s", File: "s.yaml", Variant: "v",
		Params:    json.RawMessage(`{"network":{},"server":{},"client":{},"load":{},"time_scale":1}`),
		TimeScale: 1, Seed: 7, StartedAt: time.Unix(0, 0).UTC(), WallMs: 12.5, Status: StatusFail,
		Metrics: check.Metrics{Requests: 10, Errors: 1, LatencyMs: check.Latency{P50: 150}},
		Checks: []Check{{Kind: "expect", Expr: "errors == 0", Pass: false, Observed: map[string]float64{"errors": 1},
			File: "s.yaml", Line: 3, Col: 5}},
		RequestsFile: RequestsPath("s", "v"),
	}
}

func TestWriteReadAndValidate(t *testing.T) {
	out := t.TempDir()
	w, err := Create(out, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRun(sampleRun()); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteScenario(&Scenario{KalabVersion: "test", RunID: "r1", Scenario: "s", File: "s.yaml", Runs: 1, Status: StatusPass, Checks: []Check{}}); err != nil {
		t.Fatal(err)
	}
	rw, err := w.Requests("s", "v")
	if err != nil {
		t.Fatal(err)
	}
	rw.Write(&Request{Seq: 0, StartMs: 0, LatencyMs: 150.2, Conn: 1, Attempts: 1, Status: 200, Bytes: 200})
	rw.Write(&Request{Seq: 1, StartMs: 151, LatencyMs: 3, Conn: 1, Reused: true, Attempts: 1, Class: "reset", Error: "read: connection reset by peer"})
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(&Invocation{RunID: "r1", State: InvocationEnded, Completed: true, PlanHash: strings.Repeat("0", 64), Planned: 1, Recorded: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ValidateDir(t, filepath.Join(out, "r1"))

	res, err := ReadFile(filepath.Join(out, "latest", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 || len(res.Scenarios) != 1 || res.Runs[0].Metrics.Errors != 1 || res.Runs[0].Checks[0].Observed["errors"] != 1 {
		t.Fatalf("read back %+v", res)
	}
}

func TestReadRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"not json\n", "1: not a JSON object"},
		{`{"record":"run","record_version":2}` + "\n", "1: record_version 2"},
		{`{"record":"banana","record_version":1}` + "\n", `1: unknown record "banana"`},
		{"\n" + `{"record":"run","record_version":1,"surprise":1}` + "\n", `2: run record: json: unknown field "surprise"`},
	} {
		_, err := read(strings.NewReader(tc.in), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Read(%q) = %v; want %q", tc.in, err, tc.want)
		}
	}
}

func TestLatestMovesToNewestRun(t *testing.T) {
	out := t.TempDir()
	for _, id := range []string{"a", "b"} {
		w, err := Create(out, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Readlink(filepath.Join(out, "latest")); id == "b" && err != nil {
			t.Fatal("latest should still name a before b's invocation record is written")
		} else if id == "a" && err == nil {
			t.Fatal("latest moved before the invocation record was written")
		}
		if err := w.Finish(&Invocation{RunID: id, State: InvocationEnded, Completed: true, PlanHash: strings.Repeat("0", 64)}); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	target, err := os.Readlink(filepath.Join(out, "latest"))
	if err != nil || target != "b" {
		t.Fatalf("latest -> %q, %v; want b", target, err)
	}
	if _, err := Create(out, "b"); err == nil {
		t.Fatal("Create reused an existing run directory")
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"rtt=150ms,keepalive=false": "rtt=150ms,keepalive=false",
		"a/b c":                     "a%2fb%20c",
		"..":                        "%2e.",
		"":                          "%",
		"Node":                      "!node",
		"/a/b":                      "%2fa%2fb",
		"/a_b":                      "%2fa_b",
		"/a?b":                      "%2fa%3fb",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q; want %q", in, got, want)
		}
	}
}

// Names that differ only in separators or in case get different files, even on a file
// system that ignores case; the escape is injective, long names included.
func TestSafeNameIsInjectiveAndCaseSafe(t *testing.T) {
	names := []string{"/a/b", "/a_b", "/a?b", "/a b", "_a_b", "%2fa_b", "!a", "A", "a", "ab", "aB", "Ab", "AB",
		"path=/A/b", "path=/a/B", ".", "..", "%", "%25", "é", "e\u0301", strings.Repeat("x", 300), strings.Repeat("x", 301),
		strings.Repeat("x", 180) + "~", strings.Repeat("X", 250)}
	seen := map[string]string{}
	for _, n := range names {
		got := SafeName(n)
		if strings.ToLower(got) != got {
			t.Errorf("SafeName(%q) = %q has upper case", n, got)
		}
		if len(got) > 200 || strings.ContainsAny(got, "/\\:*?\"<>|") || got == "." || got == ".." {
			t.Errorf("SafeName(%q) = %q is not a portable file name", n, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("SafeName(%q) = SafeName(%q) = %q", n, other, got)
		}
		seen[got] = n
	}
}

// failingFile writes the first limit bytes it is given, then fails as a full disk does,
// in the middle of a line.
type failingFile struct {
	*os.File
	limit int
}

func (f *failingFile) Write(p []byte) (int, error) {
	if len(p) <= f.limit {
		f.limit -= len(p)
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.limit])
	f.limit = 0
	return n, syscall.ENOSPC
}

// fullAfter creates run r1 under out with a results file whose disk fills after lines
// sample run records and 40 bytes more, and returns its writer and one record's line.
func fullAfter(t *testing.T, out string, lines int) (*Writer, []byte) {
	t.Helper()
	w, err := Create(out, "r1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r := sampleRun()
	r.Record, r.RecordVersion = "run", RecordVersion
	line, _ := json.Marshal(r)
	w.f = &failingFile{File: w.f.(*os.File), limit: lines*(len(line)+1) + 40}
	return w, line
}

func TestWriteErrorLeavesWholeLinesAndSticks(t *testing.T) {
	out := t.TempDir()
	w, first := fullAfter(t, out, 1)
	if err := w.WriteRun(sampleRun()); err != nil {
		t.Fatal(err)
	}
	err := w.WriteRun(sampleRun())
	if err == nil || !strings.Contains(err.Error(), "results.jsonl: no space left on device") {
		t.Fatalf("second write = %v; want the file and ENOSPC", err)
	}
	// The disk has room again: nothing may be glued onto the fragment, because nothing is
	// written after the first error.
	w.f.(*failingFile).limit = 1 << 20
	if err2 := w.WriteRun(sampleRun()); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("a write after the error = %v; want the first error again", err2)
	}
	data, _ := os.ReadFile(w.Path)
	if string(data) != string(first)+"\n" {
		t.Fatalf("results.jsonl holds %q; want exactly the first line", data)
	}
	// Finish tries once more for the closing record, marked not completed.
	inv := &Invocation{RunID: "r1", State: InvocationEnded, Completed: true, PlanHash: strings.Repeat("0", 64)}
	if ferr := w.Finish(inv); ferr == nil || inv.Completed {
		t.Fatalf("Finish after a write error = %v, completed %v", ferr, inv.Completed)
	}
	res, err := ReadFile(w.Path)
	if err != nil || len(res.Runs) != 1 || res.Invocation == nil || res.Invocation.Completed || !strings.Contains(res.Invocation.Reason, "no space left") {
		t.Fatalf("read back %+v, %v", res, err)
	}
	ValidateDir(t, filepath.Join(out, "r1"))
}

// After a write error the closing record counts the run records that reached the file, not
// the runs the caller tallied (runs that ended but could not be written are not in it), and
// says the results are incomplete.
func TestRecordedCountsWhatReachedTheFile(t *testing.T) {
	out := t.TempDir()
	// Room for two records and part of the third; the disk is not under test.
	w, _ := fullAfter(t, out, 2)
	runs := []Run{*sampleRun(), *sampleRun(), *sampleRun(), *sampleRun()}
	runs[1].Status, runs[2].Status, runs[3].Status = StatusError, StatusError, StatusInterrupted
	for i := range runs {
		_ = w.WriteRun(&runs[i])
	}
	inv := &Invocation{RunID: "r1", State: InvocationEnded, PlanHash: strings.Repeat("0", 64), Planned: 5}
	inv.Tally(runs)                    // what the caller saw end: four runs
	w.f.(*failingFile).limit = 1 << 20 // room again for the closing record
	if ferr := w.Finish(inv); ferr == nil {
		t.Fatal("Finish after a write error returned nil")
	}
	res, err := ReadFile(w.Path)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Invocation
	if len(res.Runs) != 2 || got == nil {
		t.Fatalf("read back %d run records, invocation %+v; want 2 and a closing record", len(res.Runs), got)
	}
	if got.Recorded != len(res.Runs) || got.Errored != 1 || got.Interrupted != 0 {
		t.Errorf("closing record: runs_recorded %d, runs_errored %d, runs_interrupted %d; want %d, 1, 0 (the records in the file)",
			got.Recorded, got.Errored, got.Interrupted, len(res.Runs))
	}
	if got.Completed || !strings.Contains(got.Describe(), "2 of 5 runs recorded") || !strings.Contains(got.Describe(), "no space left") {
		t.Errorf("closing record completed %v, described %q; want incomplete, 2 of 5 recorded, and the error", got.Completed, got.Describe())
	}
}

func TestDeletedDirectoryIsAWriteError(t *testing.T) {
	out := t.TempDir()
	w, err := Create(out, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	os.RemoveAll(w.Dir)
	if err := w.WriteRun(sampleRun()); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("write into a removed directory = %v", err)
	}
}

// Seal closes the file of a process that died: a partial last line is cut, a crashed
// record with the counts read from the file is appended, and latest moves.
func TestSealAfterCrash(t *testing.T) {
	out := t.TempDir()
	w, err := Create(out, "r1")
	if err != nil {
		t.Fatal(err)
	}
	w.WriteInvocation(&Invocation{RunID: "r1", State: InvocationStarted, PlanHash: strings.Repeat("a", 64), Planned: 3})
	w.WriteRun(sampleRun())
	w.Close()
	f, _ := os.OpenFile(w.Path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"record":"run","recor`)
	f.Close()
	wrote, err := Seal(out, "r1", "killed by signal 9", time.Now())
	if err != nil || !wrote {
		t.Fatalf("Seal = %v, %v", wrote, err)
	}
	res, err := ReadFile(filepath.Join(out, "latest", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	inv := res.Invocation
	if inv.State != InvocationCrashed || inv.Completed || inv.Planned != 3 || inv.Recorded != 1 || inv.Reason != "killed by signal 9" || inv.PlanHash != strings.Repeat("a", 64) {
		t.Fatalf("sealed with %+v", inv)
	}
	ValidateDir(t, filepath.Join(out, "r1"))
	// A second Seal finds the closing record and leaves the file alone.
	if wrote, err := Seal(out, "r1", "again", time.Now()); wrote || err != nil {
		t.Fatalf("second Seal = %v, %v", wrote, err)
	}
}

func TestValidateFileCatchesSchemaBreaks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.jsonl")
	good, _ := json.Marshal(sampleRun())
	var bad map[string]any
	if err := json.Unmarshal(good, &bad); err != nil {
		t.Fatal(err)
	}
	bad["record"], bad["record_version"] = "run", 1
	delete(bad, "metrics")
	badLine, _ := json.Marshal(bad)
	if err := os.WriteFile(p, append(badLine, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := validateFile(p, false); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Fatalf("a run without metrics passed validation: %v", err)
	}
}
