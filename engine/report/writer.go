package report

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// NewRunID returns a sortable, unique id: UTC time plus a random suffix.
func NewRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Writer writes one invocation's results under <out>/<run-id>/. Each record is written and
// synced as it is produced, so an interrupted invocation leaves only whole lines.
type Writer struct {
	Dir string // <out>/<run-id>
	mu  sync.Mutex
	f   *os.File
}

// Create makes <out>/<run-id>/results.jsonl and points <out>/latest at it.
func Create(out, runID string) (*Writer, error) {
	dir := filepath.Join(out, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create results file: %w", err)
	}
	if err := pointLatest(out, runID); err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{Dir: dir, f: f}, nil
}

// pointLatest makes <out>/latest a symlink to the run directory, replacing it atomically.
func pointLatest(out, runID string) error {
	tmp := filepath.Join(out, ".latest-"+runID)
	os.Remove(tmp)
	if err := os.Symlink(runID, tmp); err != nil {
		return fmt.Errorf("point results/latest at %s: %w", runID, err)
	}
	if err := os.Rename(tmp, filepath.Join(out, "latest")); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("point results/latest at %s: %w", runID, err)
	}
	return nil
}

// WriteRun appends a run record.
func (w *Writer) WriteRun(r *Run) error {
	r.Record, r.RecordVersion = "run", RecordVersion
	return w.writeLine(r)
}

// WriteScenario appends a scenario record.
func (w *Writer) WriteScenario(s *Scenario) error {
	s.Record, s.RecordVersion = "scenario", RecordVersion
	return w.writeLine(s)
}

func (w *Writer) writeLine(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode result record: %w", err)
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(line); err != nil {
		return fmt.Errorf("write results.jsonl: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync results.jsonl: %w", err)
	}
	return nil
}

// Close closes results.jsonl.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._=,+-]+`)

// SafeName makes a scenario or variant name usable as a file name on every OS.
func SafeName(s string) string {
	s = unsafeName.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// RequestsPath is the request file of a run, relative to the run directory.
func RequestsPath(scenario, variant string) string {
	return filepath.Join("requests", SafeName(scenario), SafeName(variant)+".jsonl")
}

// ClientLogPath is where a real client's standard error is kept, relative to the run
// directory.
func ClientLogPath(scenario, variant string) string {
	return filepath.Join("clients", SafeName(scenario), SafeName(variant)+".stderr")
}

// ClientLog creates the file for a real client's standard error.
func (w *Writer) ClientLog(scenario, variant string) (*os.File, error) {
	p := filepath.Join(w.Dir, ClientLogPath(scenario, variant))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create client log directory: %w", err)
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, fmt.Errorf("create client log: %w", err)
	}
	return f, nil
}

// RequestWriter streams one run's request records through a buffer.
type RequestWriter struct {
	f   *os.File
	bw  *bufio.Writer
	enc *json.Encoder
	err error
}

// Requests opens requests/<scenario>/<variant>.jsonl for a run.
func (w *Writer) Requests(scenario, variant string) (*RequestWriter, error) {
	p := filepath.Join(w.Dir, RequestsPath(scenario, variant))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create request directory: %w", err)
	}
	f, err := os.Create(p)
	if err != nil {
		return nil, fmt.Errorf("create request file: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	return &RequestWriter{f: f, bw: bw, enc: json.NewEncoder(bw)}, nil
}

// Write appends one request; the first error is kept and returned by Close.
func (rw *RequestWriter) Write(r *Request) {
	if rw.err == nil {
		rw.err = rw.enc.Encode(r)
	}
}

// Close flushes and closes the file.
func (rw *RequestWriter) Close() error {
	if err := rw.bw.Flush(); rw.err == nil {
		rw.err = err
	}
	if err := rw.f.Close(); rw.err == nil {
		rw.err = err
	}
	if rw.err != nil {
		return fmt.Errorf("write request records: %w", rw.err)
	}
	return nil
}
