package report

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kalab-dev/kalab/engine/atomicfile"
)

// NewRunID returns a sortable, unique id: UTC time plus a random suffix.
func NewRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// ResultsFile is the name of the records file in a run directory.
const ResultsFile = "results.jsonl"

// Writer writes one invocation's results under <out>/<run-id>/. Each record is written in
// one write and synced as it is produced, so an interrupted or killed invocation leaves only
// whole lines. The first write error is sticky: the partial line is truncated away, no
// record is written after it, and every later call returns it.
//
// results.jsonl is appended in place rather than renamed into place like the other outputs:
// it must hold the runs that ended when the process dies. It is created exclusively in a
// directory kalab has just made, so it never replaces anything.
type Writer struct {
	Dir  string // <out>/<run-id>
	Path string // <out>/<run-id>/results.jsonl

	out, runID string
	mu         sync.Mutex
	f          file
	size       int64 // bytes of whole lines written
	err        error
	claimed    map[string]string // request file -> the run that wrote it
	// written counts the run records that reached the file (Recorded, Interrupted, Errored).
	written Invocation
}

// file is what the Writer needs of results.jsonl; tests put a failing one in its place.
type file interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Create makes <out>/<run-id>/results.jsonl. It does not touch <out>/latest: Finish points
// it at the run once the invocation record is written.
func Create(out, runID string) (*Writer, error) {
	if err := os.MkdirAll(out, atomicfile.DirMode); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	dir := filepath.Join(out, runID)
	if err := os.Mkdir(dir, atomicfile.DirMode); err != nil {
		return nil, fmt.Errorf("create results directory: %w", err)
	}
	p := filepath.Join(dir, ResultsFile)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL|os.O_APPEND, atomicfile.Mode)
	if err != nil {
		return nil, fmt.Errorf("create results file: %w", err)
	}
	return &Writer{Dir: dir, Path: p, out: out, runID: runID, f: f, claimed: map[string]string{}}, nil
}

// CheckOut fails when results cannot be written under out: out is not a directory (or
// cannot be made), accepts no new files, or its latest entry is something other than the
// symbolic link kalab maintains. Run it before the first run.
func CheckOut(out string) error {
	st, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Created at the start of the invocation; its parent must accept it.
		parent := filepath.Dir(filepath.Clean(out))
		for {
			if _, err := os.Stat(parent); err == nil || parent == filepath.Dir(parent) {
				break
			}
			parent = filepath.Dir(parent)
		}
		return atomicfile.CheckDir(parent)
	case err != nil:
		return &atomicfile.RefusedError{Path: out, Reason: unwrapPath(err).Error()}
	case !st.IsDir():
		return &atomicfile.RefusedError{Path: out, Reason: "is not a directory"}
	}
	if err := atomicfile.CheckDir(out); err != nil {
		return err
	}
	latest := filepath.Join(out, "latest")
	if st, err := os.Lstat(latest); err == nil && st.Mode()&fs.ModeSymlink == 0 {
		return &atomicfile.RefusedError{Path: latest, Reason: "is not the symbolic link kalab points at the newest run; move it away"}
	}
	return nil
}

// pointLatest makes <out>/latest a symlink to the run directory, replacing it atomically.
func pointLatest(out, runID string) error {
	tmp := filepath.Join(out, ".latest-"+runID)
	_ = os.Remove(tmp) // a leftover of an earlier try, if any: the Symlink below fails if it stays
	if err := os.Symlink(runID, tmp); err != nil {
		return fmt.Errorf("point %s at %s: %w", filepath.Join(out, "latest"), runID, err)
	}
	if err := os.Rename(tmp, filepath.Join(out, "latest")); err != nil {
		_ = os.Remove(tmp) // the error returned says what failed
		return fmt.Errorf("point %s at %s: %w", filepath.Join(out, "latest"), runID, err)
	}
	return nil
}

// WriteRun appends a run record.
func (w *Writer) WriteRun(r *Run) error {
	r.Record, r.RecordVersion = "run", RecordVersion
	if err := w.writeLine(r); err != nil {
		return err
	}
	w.mu.Lock()
	w.written.count(r.Status)
	w.mu.Unlock()
	return nil
}

// WriteScenario appends a scenario record.
func (w *Writer) WriteScenario(s *Scenario) error {
	s.Record, s.RecordVersion = "scenario", RecordVersion
	return w.writeLine(s)
}

// WriteInvocation appends an invocation record.
func (w *Writer) WriteInvocation(inv *Invocation) error {
	inv.Record, inv.RecordVersion = "invocation", RecordVersion
	return w.writeLine(inv)
}

// Finish writes the invocation's closing record and then points <out>/latest at the run, so
// that latest never names a run whose record of completion is missing. Its counts are the
// run records that reached the file, whatever the caller tallied: after a write error, runs
// that ended but could not be written are not in it. After a write error it still tries the
// record (the error may have been transient), marked not completed.
func (w *Writer) Finish(inv *Invocation) error {
	w.mu.Lock()
	inv.Recorded, inv.Interrupted, inv.Errored = w.written.Recorded, w.written.Interrupted, w.written.Errored
	prev := w.err
	if prev != nil {
		inv.Completed = false
		if inv.Reason == "" {
			inv.Reason = prev.Error()
		}
		w.err = nil // one more try, for the record that says the file is incomplete
	}
	w.mu.Unlock()
	err := w.WriteInvocation(inv)
	if err == nil {
		err = pointLatest(w.out, w.runID)
	}
	if prev != nil {
		return prev
	}
	return err
}

// Err returns the first write error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) writeLine(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode result record: %w", err)
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	n, err := w.f.Write(line)
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = w.f.Sync()
	}
	if err == nil && !linked(w.f) {
		err = errDeleted
	}
	if err != nil {
		// Cut the partial line away, so the file stays whole lines and a later append
		// cannot be glued onto a fragment.
		if terr := w.f.Truncate(w.size); terr != nil {
			err = fmt.Errorf("%w (and removing the partial line failed: %v)", err, terr)
		}
		w.err = fmt.Errorf("write %s: %w", w.Path, unwrapPath(err))
		return w.err
	}
	w.size += int64(n)
	return nil
}

// errDeleted is the write error of a results file that is no longer in any directory.
var errDeleted = errors.New("the file was deleted (or its directory removed) while kalab was writing it")

// Close closes results.jsonl.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// SafeName makes a scenario or variant name a file name that no other name maps to, on a
// case-sensitive or case-insensitive file system: lower-case letters, digits and ._=,+-
// stay; an upper-case letter becomes ! and the letter in lower case (as the Go module proxy
// escapes paths); any other byte, and a leading dot, becomes %xx in lower-case hex. The
// mapping is injective and its output has no upper-case letters, so names differing only in
// separators or in case get different files. A name whose escape is longer than 200 bytes
// keeps its first 180 and a hash of the whole name after a ~ (which no escape produces).
func SafeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '=', c == ',', c == '+', c == '-':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte('!')
			b.WriteByte(c + 'a' - 'A')
		default:
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	out := b.String()
	if out == "" {
		return "%"
	}
	if len(out) > 200 {
		sum := sha256.Sum256([]byte(s))
		out = out[:180] + "~" + hex.EncodeToString(sum[:8])
	}
	return out
}

// RequestsPath is the request file of a run, relative to the run directory.
func RequestsPath(scenario, variant string) string {
	return filepath.Join("requests", SafeName(scenario), SafeName(variant)+".jsonl")
}

// ConnectionsPath is the connection file of a run, relative to the run directory.
func ConnectionsPath(scenario, variant string) string {
	return filepath.Join("connections", SafeName(scenario), SafeName(variant)+".jsonl")
}

// WriteConns writes a run's connection records to connections/<scenario>/<variant>.jsonl,
// whole or not at all (through engine/atomicfile).
func (w *Writer) WriteConns(scenario, variant string, conns []Conn) error {
	p := filepath.Join(w.Dir, ConnectionsPath(scenario, variant))
	if err := w.mkdirIn(filepath.Dir(p)); err != nil {
		return fmt.Errorf("create connection directory: %w", err)
	}
	err := atomicfile.Write(p, func(out io.Writer) error {
		bw := bufio.NewWriterSize(out, 64<<10)
		enc := json.NewEncoder(bw)
		for i := range conns {
			conns[i].Record = "conn"
			if err := enc.Encode(&conns[i]); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("write connection records: %w", err)
	}
	return nil
}

// mkdirIn creates dir and its parents below the run directory, but never the run directory
// itself: a run directory deleted mid-run stays deleted, and the write fails.
func (w *Writer) mkdirIn(dir string) error {
	if _, err := os.Stat(w.Dir); err != nil {
		return unwrapPath(err)
	}
	return os.MkdirAll(dir, atomicfile.DirMode)
}

// ClientLogPath is where a real client's standard error is kept, relative to the run
// directory.
func ClientLogPath(scenario, variant string) string {
	return filepath.Join("clients", SafeName(scenario), SafeName(variant)+".stderr")
}

// ClientLog creates the file for a real client's standard error.
func (w *Writer) ClientLog(scenario, variant string) (*os.File, error) {
	p := filepath.Join(w.Dir, ClientLogPath(scenario, variant))
	if err := w.mkdirIn(filepath.Dir(p)); err != nil {
		return nil, fmt.Errorf("create client log directory: %w", err)
	}
	// Appended to by the client program as it runs, so not renamed into place: created
	// exclusively in the new run directory instead, never replacing a file.
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, atomicfile.Mode)
	if err != nil {
		return nil, fmt.Errorf("create client log: %w", err)
	}
	return f, nil
}

// Rerun prepares the files of a run that is tried again (a noisy run rerun alone): the
// next attempt's request file replaces this one's, and this attempt's client log and real
// server logs are removed, so the files left are the final attempt's, like its record.
func (w *Writer) Rerun(scenario, variant string) error {
	w.mu.Lock()
	delete(w.claimed, RequestsPath(scenario, variant))
	w.mu.Unlock()
	err := os.Remove(filepath.Join(w.Dir, ClientLogPath(scenario, variant)))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove the client log of an earlier attempt: %w", err)
	}
	// A real server's logs are appended to: the next attempt starts them afresh.
	if err := os.RemoveAll(filepath.Join(w.Dir, ServerLogsPath(scenario, variant))); err != nil {
		return fmt.Errorf("remove the server logs of an earlier attempt: %w", err)
	}
	return nil
}

// RequestWriter streams one run's request records through a buffer into a temporary file,
// renamed into place by Close: a request file is whole or absent.
type RequestWriter struct {
	f   *atomicfile.File
	bw  *bufio.Writer
	buf []byte // one line, reused (appendRequest)
	err error
}

// Requests opens requests/<scenario>/<variant>.jsonl for a run. Two runs that would share a
// file are an error, never one file silently replacing the other.
func (w *Writer) Requests(scenario, variant string) (*RequestWriter, error) {
	rel := RequestsPath(scenario, variant)
	w.mu.Lock()
	if other, dup := w.claimed[rel]; dup {
		w.mu.Unlock()
		return nil, fmt.Errorf("request file %s is already written by run %s", rel, other)
	}
	w.claimed[rel] = scenario + " / " + variant
	w.mu.Unlock()
	p := filepath.Join(w.Dir, rel)
	if err := w.mkdirIn(filepath.Dir(p)); err != nil {
		return nil, fmt.Errorf("create request directory: %w", err)
	}
	f, err := atomicfile.Create(p)
	if err != nil {
		return nil, fmt.Errorf("create request file: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	return &RequestWriter{f: f, bw: bw, buf: make([]byte, 0, 512)}, nil
}

// Write appends one request; the first error is kept and returned by Close.
func (rw *RequestWriter) Write(r *Request) {
	if rw.err != nil {
		return
	}
	var err error
	if rw.buf, err = appendRequest(rw.buf[:0], r); err != nil {
		rw.err = err
		return
	}
	_, rw.err = rw.bw.Write(rw.buf)
}

// Close flushes the records and renames the file into place; after an error the file is
// dropped instead.
func (rw *RequestWriter) Close() error {
	if err := rw.bw.Flush(); rw.err == nil {
		rw.err = err
	}
	if rw.err != nil {
		rw.f.Abort()
		return fmt.Errorf("write request records %s: %w", rw.f.Name(), rw.err)
	}
	return rw.f.Commit()
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
