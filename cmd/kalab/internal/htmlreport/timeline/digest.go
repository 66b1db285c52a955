package timeline

import (
	"cmp"
	"math"
	"slices"

	"github.com/kalab-dev/kalab/engine/report"
)

// entryBudget bounds the entries a canvas run of a digest sends to the page: the merge gap
// grows with the lanes so that lanes times columns stays under it.
const entryBudget = 400000

// Digest is the lanes of a run too large to hold (more than MaxDrawn requests), built as
// its request file is read twice: Count takes each request's time and connection in the
// first pass, Lay orders the lanes and sizes what they draw, Add files each request on its
// lane in the second pass, and Finish closes them. The failed, retried and re-sent
// requests are kept one by one; the others are merged per lane (a canvas run: successful
// requests of one kind closer than GapMs on a lane are one entry) or counted per lane and
// bucket (an SVG run: BucketMs buckets, as appendBuckets draws them). What it holds grows
// with the lanes and the page's pixel columns, not with the requests.
type Digest struct {
	N        int // requests counted
	Span     float64
	Lanes    []*lane // in lane order (laneOrder's), with their closes
	Pauses   [][2]float64
	Canvas   bool
	GapMs    float64
	BucketMs float64

	// What only the passes need, let go by Finish.
	byConn map[uint64]*lane // the first pass's lanes
	idx    map[uint64]int   // a connection's lane in Lanes
	open   []entry          // each lane's run being merged (n = 0: none)
	pg     *pauseGrid
}

// NewDigest starts a digest for its first pass.
func NewDigest() *Digest { return &Digest{Span: 1, byConn: map[uint64]*lane{}} }

// Count is the first pass's look at a request: it started at start, took latency and went
// on connection conn (0: none).
func (d *Digest) Count(start, latency float64, conn uint64) {
	d.N++
	l := d.byConn[conn]
	if l == nil {
		l = &lane{conn: conn, from: start}
		d.byConn[conn] = l
	}
	end := start + latency
	l.from, l.to = min(l.from, start), max(l.to, end)
	d.Span = max(d.Span, end)
}

// Lay ends the first pass: it orders the lanes, marks the closes of conns on them (which
// widen the span) and sizes the buckets, the merge gap and the pause grid of the second.
func (d *Digest) Lay(conns []report.Conn, pl Plan) {
	d.Lanes, d.Span = sortLanes(d.byConn, conns, pl, d.Span)
	d.byConn = nil
	d.Canvas = len(d.Lanes) > CanvasLanes
	d.BucketMs = d.Span / 400
	d.GapMs = d.Span / float64(max(16, min(4000, entryBudget/max(len(d.Lanes), 1))))
	d.idx = make(map[uint64]int, len(d.Lanes))
	for i, l := range d.Lanes {
		d.idx[l.conn] = i
	}
	if pl.Burst > 0 && pl.PauseMinMs > 0 {
		d.pg = newPauseGrid(d.Span, pl.PauseMinMs)
	}
	d.open = make([]entry, len(d.Lanes))
}

// Add files a request of the second pass on its lane.
func (d *Digest) Add(r *Request) {
	if d.pg != nil {
		d.pg.add(r.StartMs, r.StartMs+r.LatencyMs)
	}
	i := d.idx[r.Conn]
	d.place(d.Lanes[i], &d.open[i], r)
}

// Finish ends the second pass: each lane's last merged run is kept, its entries sorted by
// start, and the pauses between bursts found.
func (d *Digest) Finish(pl Plan) {
	for i, l := range d.Lanes {
		flushEntry(l, &d.open[i])
		slices.SortStableFunc(l.ents, func(a, b entry) int { return cmp.Compare(a.start, b.start) })
	}
	if d.pg != nil {
		d.Pauses = d.pg.pauses(pl.PauseMinMs / 2)
	}
	d.idx, d.open, d.pg = nil, nil, nil
}

// entry is what a canvas lane of a digest sends to the page: a request as itself (n = 0:
// seq is its number) or n successful requests of one kind merged into one bar.
type entry struct {
	start, lat float64
	kind       string
	seq, n     int
	err, class string // a failed request's errText and error class
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
		if k == KindFailed {
			c.failed++
		}
		return
	}
	end := r.StartMs + r.LatencyMs
	if k == KindFailed || k == KindRetried || k == KindHidden {
		e := entry{start: r.StartMs, lat: r.LatencyMs, kind: k, seq: r.Seq}
		if k == KindFailed {
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
