package replay

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Formats a Source reads.
const (
	FormatNginx = "nginx"
	FormatJSONL = "jsonl"
	FormatHAR   = "har"
)

// Formats lists the formats, for messages and the schema.
var Formats = []string{FormatNginx, FormatJSONL, FormatHAR}

// Client keys every format knows; any other key names a JSON field (jsonl) or a request
// header (har).
const (
	KeyAddr      = "addr"
	KeyUserAgent = "user_agent"
)

// Defaults.
const (
	DefaultWindow = 1024 // requests held to reorder start times
	DefaultMaxBad = 20   // bad lines kept with their numbers
	maxLine       = 1 << 20
)

// Fields names the fields of a JSON-lines record; empty names take the defaults
// (time, client, user_agent).
type Fields struct {
	Time, Client, UserAgent string
}

// Config says what to read and which of it to keep.
type Config struct {
	Path   string
	Format string // "" detects it from the extension, then the first bytes
	// Key groups requests into clients: addr (the default), user_agent, or a field name
	// (jsonl) or request header (har). For HAR, addr means the entry's page (pageref):
	// HAR records no client address.
	Key    string
	Fields Fields
	// From and To cut a window out of the recording, as offsets from its first request;
	// To 0 means the end. Offsets of the kept requests count from From.
	From, To time.Duration
	// Sample, in (0, 1), keeps that fraction of the clients (not of the requests), chosen
	// by a hash of the key and Seed, so a kept client keeps all its gaps. 0 or 1 keeps all.
	Sample float64
	Seed   int64
	Window int // reorder window; 0 means DefaultWindow
	MaxBad int // bad lines kept with their numbers; 0 means DefaultMaxBad
}

// Request is one recorded request: where it was in the file, when it started relative
// to the replay's start, and the client that sent it.
type Request struct {
	Line   int
	At     time.Duration
	Client string
}

// Bad is a line that did not parse.
type Bad struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Summary is what a Source read.
type Summary struct {
	Format   string        `json:"format"`
	Lines    int           `json:"lines"`    // lines (HAR: entries) read
	Requests int           `json:"requests"` // requests handed out
	Skipped  int           `json:"skipped"`  // good requests outside the window or of a client not sampled
	Late     int           `json:"late"`     // requests further out of order than the window could sort
	BadLines int           `json:"bad_lines"`
	FirstBad []Bad         `json:"first_bad"`
	Span     time.Duration `json:"-"` // offset of the last request handed out
}

// record is a parsed request before the window: its absolute start.
type record struct {
	line int
	at   time.Time
	key  string
}

// parser yields the file's records in file order; a bad line comes back as err with its
// line, and io.EOF ends the file.
type parser interface {
	next() (rec record, line int, err error)
}

// badLine is a line-level error: the line is skipped and the file goes on.
type badLine struct{ reason string }

func (b badLine) Error() string { return b.reason }

// Source is a recording being read.
type Source struct {
	cfg   Config
	f     *os.File
	p     parser
	win   recHeap
	eof   bool
	base  time.Time
	based bool
	last  time.Time // the latest start handed out, to count late ones
	sum   Summary
	err   error
}

// Open opens the recording and detects its format when the config leaves it empty.
func Open(cfg Config) (*Source, error) {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxBad <= 0 {
		cfg.MaxBad = DefaultMaxBad
	}
	// A device or a pipe (/dev/zero, a FIFO) would be read forever or block the load, and
	// opening a FIFO blocks until something writes to it: stat the path before opening it.
	if fi, err := os.Stat(cfg.Path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", cfg.Path)
	}
	f, err := os.Open(cfg.Path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		_ = f.Close() // the error returned says what failed
		return nil, fmt.Errorf("%s is not a regular file", cfg.Path)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if cfg.Format == "" {
		cfg.Format = Detect(cfg.Path, br)
	}
	p, err := newParser(cfg, br)
	if err != nil {
		_ = f.Close() // the error returned says what failed
		return nil, err
	}
	return &Source{cfg: cfg, f: f, p: p, sum: Summary{Format: cfg.Format}}, nil
}

// CheckKey reports a client key the format cannot group by.
func CheckKey(format, key string) error {
	if format == FormatNginx && key != "" && key != KeyAddr && key != KeyUserAgent {
		return fmt.Errorf("an nginx log groups clients by addr or user_agent, not %q", key)
	}
	return nil
}

func newParser(cfg Config, br *bufio.Reader) (parser, error) {
	if err := CheckKey(cfg.Format, cfg.Key); err != nil {
		return nil, err
	}
	switch cfg.Format {
	case FormatNginx:
		return &nginxParser{lines: lines{r: br}, ua: cfg.Key == KeyUserAgent}, nil
	case FormatJSONL:
		return newJSONLParser(br, cfg.Key, cfg.Fields), nil
	case FormatHAR:
		return newHARParser(br, cfg.Key), nil
	}
	return nil, fmt.Errorf("unknown replay format %q (known: %s)", cfg.Format, strings.Join(Formats, ", "))
}

// Detect names a file's format from its extension, else from its first bytes: a JSON
// document with a "log" member is HAR, other JSON is JSON lines, anything else nginx.
func Detect(path string, br *bufio.Reader) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".har":
		return FormatHAR
	case ".jsonl", ".ndjson":
		return FormatJSONL
	case ".log":
		return FormatNginx
	}
	head, _ := br.Peek(4096)
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 || head[0] != '{' {
		return FormatNginx
	}
	if first, _, _ := bytes.Cut(head, []byte("\n")); bytes.Contains(head, []byte(`"log"`)) && !bytes.HasSuffix(bytes.TrimSpace(first), []byte("}")) {
		return FormatHAR
	}
	return FormatJSONL
}

// Close closes the file.
func (s *Source) Close() error { return s.f.Close() }

// Err is the error that ended the reading early (not a bad line, which is counted).
func (s *Source) Err() error { return s.err }

// Summary is what has been read so far.
func (s *Source) Summary() Summary { return s.sum }

// Check says why what was read cannot stand as the recording: the reading stopped early
// (a read error, a HAR file cut short or not JSON), or the lines that could not be read
// outnumber those that could, so the replay would be of a recording kalab mostly did not
// understand. nil when it stands.
func (s *Source) Check() error {
	if s.err != nil {
		return &UnreadableError{s.err}
	}
	good := s.sum.Lines - s.sum.BadLines
	if s.sum.BadLines > good {
		first := ""
		if len(s.sum.FirstBad) > 0 {
			first = fmt.Sprintf(" (the first: line %d: %s)", s.sum.FirstBad[0].Line, s.sum.FirstBad[0].Reason)
		}
		return &UnreadableError{fmt.Errorf("%d of its %d lines could not be read%s: a recording more unreadable than readable is not replayed", s.sum.BadLines, s.sum.Lines, first)}
	}
	return nil
}

// UnreadableError is a recording that opened but cannot stand as one (Check).
type UnreadableError struct{ Err error }

func (e *UnreadableError) Error() string { return e.Err.Error() }
func (e *UnreadableError) Unwrap() error { return e.Err }

// Next returns the next request in start order, false at the end of the recording (or
// of the window).
func (s *Source) Next() (Request, bool) {
	for {
		s.fill()
		if s.win.Len() == 0 {
			return Request{}, false
		}
		rec := heap.Pop(&s.win).(record)
		if !s.based {
			s.base, s.based, s.last = rec.at, true, rec.at
		}
		if rec.at.Before(s.last) {
			s.sum.Late++
			rec.at = s.last
		}
		s.last = rec.at
		off := rec.at.Sub(s.base)
		if s.cfg.To > 0 && off > s.cfg.To {
			s.eof, s.win = true, nil // the window is over: stop reading
			return Request{}, false
		}
		if off < s.cfg.From || !s.sampled(rec.key) {
			s.sum.Skipped++
			continue
		}
		s.sum.Requests++
		s.sum.Span = off - s.cfg.From
		return Request{Line: rec.line, At: off - s.cfg.From, Client: rec.key}, true
	}
}

// fill reads until the window holds Window records or the file ends.
func (s *Source) fill() {
	for !s.eof && s.win.Len() < s.cfg.Window {
		rec, line, err := s.p.next()
		switch {
		case err == nil:
			s.sum.Lines++
			heap.Push(&s.win, rec)
		case errors.Is(err, io.EOF):
			s.eof = true
		default:
			s.sum.Lines++
			s.bad(line, err)
			var b badLine
			if !errors.As(err, &b) {
				s.eof, s.err = true, err // the file cannot go on (a read error, HAR syntax)
			}
		}
	}
}

func (s *Source) bad(line int, err error) {
	s.sum.BadLines++
	if len(s.sum.FirstBad) < s.cfg.MaxBad {
		s.sum.FirstBad = append(s.sum.FirstBad, Bad{Line: line, Reason: err.Error()})
	}
}

// sampled keeps a fraction of the clients, the same ones for the same seed.
func (s *Source) sampled(key string) bool {
	if s.cfg.Sample <= 0 || s.cfg.Sample >= 1 {
		return true
	}
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(s.cfg.Seed))
	h.Write(seed[:])
	h.Write([]byte(key))
	// FNV leaves keys that differ in their last bytes (10.0.0.1, 10.0.0.2) close in its
	// high bits: splitmix64's finalizer spreads them before the top 53 bits are read.
	x := h.Sum64()
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/float64(1<<53) < s.cfg.Sample
}

// recHeap orders records by start, then by line.
type recHeap []record

func (h recHeap) Len() int { return len(h) }
func (h recHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].line < h[j].line
}
func (h recHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recHeap) Push(x any)   { *h = append(*h, x.(record)) }
func (h *recHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}

// lines reads a file a line at a time; a line longer than maxLine is skipped and
// reported as bad.
type lines struct {
	r    *bufio.Reader
	n    int
	long []byte
}

// next returns the next line without its newline, its number, and io.EOF at the end or
// badLine for an over-long line. Blank lines are skipped.
func (l *lines) next() ([]byte, int, error) {
	for {
		b, err := l.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			l.long = append(l.long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) && len(l.long) <= maxLine {
				b, err = l.r.ReadSlice('\n')
				l.long = append(l.long, b...)
			}
			if len(l.long) > maxLine {
				l.n++
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = l.r.ReadSlice('\n')
				}
				return nil, l.n, badLine{fmt.Sprintf("longer than %d bytes", maxLine)}
			}
			b = l.long
		}
		if len(b) == 0 && err != nil {
			return nil, l.n, err
		}
		l.n++
		b = bytes.TrimRight(b, "\r\n")
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		return b, l.n, nil
	}
}

// Scan reads a whole recording as a replay would, in the same bounded memory, and says
// what it found: the count of requests and the span a replay of it takes. A file that
// cannot be opened is an error, and so is one that cannot stand as a recording (an
// *UnreadableError, from Check); what could not be read is in the summary's bad lines.
func Scan(cfg Config) (Summary, error) {
	s, err := Open(cfg)
	if err != nil {
		return Summary{}, err
	}
	defer func() { _ = s.Close() }() // read only: a failed close loses nothing
	for {
		if _, ok := s.Next(); !ok {
			break
		}
	}
	return s.Summary(), s.Check()
}
