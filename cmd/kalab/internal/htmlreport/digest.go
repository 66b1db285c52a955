package htmlreport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report"
)

// HoldMax is how many requests of a run the loader holds one by one. A run with more is
// read as a stream, twice, and kept as a Digest: what the page draws of it, in memory that
// grows with its lanes and the page's pixel columns, not with its requests (a
// million-request run took about 1 GB and 30 s to write its report when every request was
// held). It is timeline.MaxDrawn: a run of more requests is drawn aggregated in any case.
const HoldMax = timeline.MaxDrawn

// Digest is a run's requests as the page draws them when there are more than HoldMax: the
// timeline's lanes (timeline.Digest), the latency histogram's bins, the phases' sums and
// kalab explain's paragraphs of its troubled requests.
type Digest struct {
	*timeline.Digest
	Explain string // kalab explain's paragraphs of its troubled requests, as JSON (explainStream)
	Hist    histCounts
	Phases  phaseAcc
}

// reqLite is what the first pass reads of a request line.
type reqLite struct {
	StartMs   float64 `json:"start_ms"`
	LatencyMs float64 `json:"latency_ms"`
	Conn      uint64  `json:"conn"`
}

// quickLite reads the three numbers the first pass needs from a request line without
// decoding it (a third of the time of json.Unmarshal), as kalab's request writer lays
// them out: a key, a colon, a number. ok is false when a field is missing or not so
// written; the caller then decodes the line. A key cannot occur inside a string value:
// there its quotes are escaped.
func quickLite(b []byte) (r reqLite, ok bool) {
	var ok1, ok2, ok3 bool
	r.StartMs, ok1 = quickNum(b, `"start_ms":`)
	r.LatencyMs, ok2 = quickNum(b, `"latency_ms":`)
	c, ok3 := quickNum(b, `"conn":`)
	if !ok1 || !ok2 || !ok3 || c < 0 || c != math.Trunc(c) || c > 1<<53 {
		return reqLite{}, false
	}
	r.Conn = uint64(c)
	return r, true
}

func quickNum(b []byte, key string) (float64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 || bytes.Contains(b[i+len(key):], []byte(key)) { // absent, or twice: let json say
		return 0, false
	}
	v := b[i+len(key):]
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.' || v[end] == '-' || v[end] == '+' || v[end] == 'e' || v[end] == 'E') {
		end++
	}
	if end == 0 || end == len(v) || (v[end] != ',' && v[end] != '}') {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(v[:end]), 64)
	return x, err == nil
}

// countRequests returns how many request lines path holds, without decoding them.
func countRequests(path string) (int, error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	br := bufio.NewReaderSize(f, 256<<10)
	n := 0
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer: count it once
			n++
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
		} else if len(bytes.TrimSpace(b)) > 0 {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// eachLine calls fn with each non-blank line of path and its number, stopping at the first
// error. The line is the reader's buffer: fn must not keep it.
func eachLine(path string, fn func(n int, b []byte) error) error {
	f, err := atomicfile.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	br := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer: gather it
			long := append([]byte(nil), b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if len(bytes.TrimSpace(b)) > 0 {
			if ferr := fn(n, b); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
}

// digestRequests reads a run's request file twice: once for its lanes, span and latency
// range, once to merge, count and keep its requests as the page draws them. conns are the
// run's connection lines (their closes are marked on the lanes and widen the span); see,
// when not nil, is shown each request of the second pass.
func digestRequests(path string, conns []report.Conn, pl timeline.Plan, see func(*report.Request)) (*Digest, error) {
	d := &Digest{Digest: timeline.NewDigest()}
	lo, hi, err := d.firstPass(path)
	if err != nil {
		return nil, err
	}
	d.Lay(conns, pl)
	d.Hist = histCounts{lo: lo, hi: hi}
	extra, read := false, 0
	err = eachLine(path, func(n int, b []byte) error {
		if read == d.N { // the file grew between the passes: draw what the first pass saw
			return nil
		}
		read++
		var r timeline.Request
		if err := json.Unmarshal(b, &r.Request); err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if read == 1 || extra {
			r.Extra = unknownMs(b)
			extra = extra || len(r.Extra) > 0
		}
		withQueueWait(&r)
		d.Hist.add(&r)
		d.Phases.add(&r)
		d.Add(&r)
		if see != nil {
			see(&r.Request)
		}
		return nil
	})
	d.Finish(pl)
	return d, err
}

// firstPass counts a run's requests and finds its lanes, its span and its latency range.
func (d *Digest) firstPass(path string) (lo, hi float64, err error) {
	lo = math.Inf(1)
	err = eachLine(path, func(n int, b []byte) error {
		r, ok := quickLite(b)
		if !ok {
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s:%d: %v", path, n, err)
			}
		}
		d.Count(r.StartMs, r.LatencyMs, r.Conn)
		v := max(r.LatencyMs, 0.01)
		lo, hi = min(lo, v), max(hi, v)
		return nil
	})
	return lo, hi, err
}
