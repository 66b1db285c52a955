package htmlreport

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report"
)

// HoldMax is how many requests of a run the loader holds one by one. A run with more is
// read as a stream, twice, and kept as a Digest: what the page draws of it, in memory that
// grows with its lanes and the page's pixel columns, not with its requests (a
// million-request run took about 1 GB and 30 s to write its report when every request was
// held). It is MaxDrawn: a run of more requests is drawn aggregated in any case.
const HoldMax = MaxDrawn

// entryBudget bounds the entries a canvas run of a digest sends to the page: the merge gap
// grows with the lanes so that lanes times columns stays under it.
const entryBudget = 400000

// Digest is a run's requests as the page draws them when there are more than HoldMax.
// The failed, retried and re-sent requests are kept one by one; the others are merged per
// lane (a canvas run: successful requests of one kind closer than GapMs on a lane are one
// entry) or counted per lane and bucket (an SVG run: BucketMs buckets, as appendBuckets
// draws them).
type Digest struct {
	Explain  string // kalab explain's paragraphs of its troubled requests, as JSON (explainStream)
	N        int    // requests read
	Span     float64
	Lanes    []*lane // in lane order (laneOrder's), with their closes
	Hist     histCounts
	Phases   phaseAcc
	Pauses   [][2]float64
	Canvas   bool
	GapMs    float64
	BucketMs float64
}

// entry is what a canvas lane of a digest sends to the page: a request as itself (n = 0:
// seq is its number) or n successful requests of one kind merged into one bar.
type entry struct {
	start, lat float64
	kind       string
	seq, n     int
	err, class string // a failed request's errText and error class
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
func digestRequests(path string, conns []report.Conn, pl plan, see func(*report.Request)) (*Digest, error) {
	d := &Digest{Span: 1}
	lanes, lo, hi, err := d.firstPass(path)
	if err != nil {
		return nil, err
	}
	d.Lanes, d.Span = sortLanes(lanes, conns, pl, d.Span)
	d.Hist = histCounts{lo: lo, hi: hi}
	d.Canvas = len(d.Lanes) > CanvasLanes
	d.BucketMs = d.Span / 400
	d.GapMs = d.Span / float64(max(16, min(4000, entryBudget/max(len(d.Lanes), 1))))
	idx := make(map[uint64]int, len(d.Lanes))
	for i, l := range d.Lanes {
		idx[l.conn] = i
	}
	var pg *pauseGrid
	if pl.Burst > 0 && pl.PauseMinMs > 0 {
		pg = newPauseGrid(d.Span, pl.PauseMinMs)
	}
	open := make([]entry, len(d.Lanes)) // each lane's run being merged (n = 0: none)
	extra, read := false, 0
	err = eachLine(path, func(n int, b []byte) error {
		if read == d.N { // the file grew between the passes: draw what the first pass saw
			return nil
		}
		read++
		var r Request
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
		if pg != nil {
			pg.add(r.StartMs, r.StartMs+r.LatencyMs)
		}
		d.place(d.Lanes[idx[r.Conn]], &open[idx[r.Conn]], &r)
		if see != nil {
			see(&r.Request)
		}
		return nil
	})
	for i, l := range d.Lanes {
		flushEntry(l, &open[i])
		slices.SortStableFunc(l.ents, func(a, b entry) int { return cmp.Compare(a.start, b.start) })
	}
	if pg != nil {
		d.Pauses = pg.pauses(pl.PauseMinMs / 2)
	}
	return d, err
}

// firstPass counts a run's requests and finds its lanes, its span and its latency range.
func (d *Digest) firstPass(path string) (lanes map[uint64]*lane, lo, hi float64, err error) {
	lanes = map[uint64]*lane{}
	lo = math.Inf(1)
	err = eachLine(path, func(n int, b []byte) error {
		r, ok := quickLite(b)
		if !ok {
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s:%d: %v", path, n, err)
			}
		}
		d.N++
		l := lanes[r.Conn]
		if l == nil {
			l = &lane{conn: r.Conn, from: r.StartMs}
			lanes[r.Conn] = l
		}
		end := r.StartMs + r.LatencyMs
		l.from, l.to = min(l.from, r.StartMs), max(l.to, end)
		d.Span = max(d.Span, end)
		v := max(r.LatencyMs, 0.01)
		lo, hi = min(lo, v), max(hi, v)
		return nil
	})
	return lanes, lo, hi, err
}

// place files request r on its lane: a canvas lane merges it into the open run or keeps it
// as itself; an SVG lane counts it in its bucket.
func (d *Digest) place(l *lane, open *entry, r *Request) {
	l.n++
	k := kindOf(&r.Request)
	if !d.Canvas {
		if l.cells == nil {
			l.cells = make([]cell, 401)
		}
		c := &l.cells[min(max(int(r.StartMs/d.BucketMs), 0), 400)]
		c.n++
		if k == kindFailed {
			c.failed++
		}
		return
	}
	end := r.StartMs + r.LatencyMs
	if k == kindFailed || k == kindRetried || k == kindHidden {
		e := entry{start: r.StartMs, lat: r.LatencyMs, kind: k, seq: r.Seq}
		if k == kindFailed {
			e.err, e.class = errText(r), r.Class
		}
		l.ents = append(l.ents, e)
		return
	}
	if open.n > 0 && (k != open.kind || r.StartMs-(open.start+open.lat) > d.GapMs || r.StartMs < open.start-d.GapMs) {
		flushEntry(l, open)
	}
	if open.n == 0 {
		*open = entry{start: r.StartMs, lat: r.LatencyMs, kind: k, seq: r.Seq}
	}
	s := min(open.start, r.StartMs)
	open.start, open.lat, open.n = s, max(open.start+open.lat, end)-s, open.n+1
}

// flushEntry moves a lane's open run into its entries.
func flushEntry(l *lane, open *entry) {
	if open.n > 0 {
		l.ents = append(l.ents, *open)
	}
	*open = entry{}
}

// cell is a bucket of an aggregated SVG lane: the requests that started in it.
type cell struct{ n, failed int }

// pauseGrid finds the pauses between bursts of a run read as a stream, as findPauses does
// for held requests: a grid of cells over the run counts the requests in flight in each,
// and keeps the latest end and earliest start that fall in each. An empty stretch is a
// pause from the latest end in the cell before it to the earliest start in the cell after
// it (every request in those cells ends, or starts, there), exact for any pause longer than
// two cells; the cells are an eighth of the shortest pause the plan gives, or finer.
type pauseGrid struct {
	res              float64
	diff             []int32
	maxEnd, minStart []float64
}

func newPauseGrid(span, pauseMin float64) *pauseGrid {
	n := int(min(1<<17, math.Ceil(span/(pauseMin/8)))) + 2
	g := &pauseGrid{res: span / float64(n-2), diff: make([]int32, n+1), maxEnd: make([]float64, n), minStart: make([]float64, n)}
	for i := range g.minStart {
		g.minStart[i], g.maxEnd[i] = math.Inf(1), math.Inf(-1)
	}
	return g
}

func (g *pauseGrid) cell(t float64) int { return min(max(int(t/g.res), 0), len(g.maxEnd)-1) }

func (g *pauseGrid) add(start, end float64) {
	a, b := g.cell(start), g.cell(max(end, start))
	g.diff[a]++
	g.diff[b+1]--
	g.minStart[a] = min(g.minStart[a], start)
	g.maxEnd[b] = max(g.maxEnd[b], max(end, start))
}

// pauses returns the empty stretches longer than minGap, [from, to] in ms.
func (g *pauseGrid) pauses(minGap float64) [][2]float64 {
	var out [][2]float64
	inFlight, last := int32(0), -1 // last: the latest cell with a request in flight
	for i := range g.maxEnd {
		inFlight += g.diff[i]
		if inFlight == 0 {
			continue
		}
		if last >= 0 && i > last+1 {
			if from, to := g.maxEnd[last], g.minStart[i]; to-from > minGap {
				out = append(out, [2]float64{from, to})
			}
		}
		last = i
	}
	return out
}
