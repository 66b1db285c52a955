package timeline

import (
	"cmp"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
)

// MaxDrawn is how many requests a run may have for each to be drawn as its own bar;
// above it the timeline aggregates each lane into time buckets.
const MaxDrawn = 10000

// plotW is the timeline's width in SVG user units; the page stretches it to the window.
const plotW = 1200

// Bar kinds, also the CSS classes of the bars.
const (
	KindNew     = "new"
	KindReused  = "reused"
	KindFailed  = "failed"
	KindRetried = "retried" // the client retried it visibly (attempts > 1) and it succeeded
	KindHidden  = "hidden"  // the library re-sent it on its own (go-net-http) and it succeeded
)

func kindOf(r *report.Request) string {
	switch {
	case r.Class != "":
		return KindFailed
	case r.HiddenRetries > 0:
		return KindHidden
	case r.Attempts > 1:
		return KindRetried
	case r.Reused:
		return KindReused
	}
	return KindNew
}

// Timeline is one run's lane chart, rendered.
type Timeline struct {
	SVG        template.HTML // the lanes
	Axis       template.HTML // the time axis with bursts and pauses
	Labels     template.HTML // lane names, beside the lanes
	Height     int
	Lanes      int      // client connections drawn
	Bars       int      // requests drawn one by one
	Failed     int      // failed bars
	Marked     int      // failed, retried or re-sent bars: what next and previous step through
	Classes    []string // the error classes of the failed bars, sorted, for the filter
	Canvas     bool     // the lanes are painted on a canvas (more than CanvasLanes of them)
	SpanMs     float64  // the time the axis covers
	Aggregated string   // how the lanes were bucketed; "" when every request is a bar
	Pauses     int
}

type lane struct {
	conn     uint64
	reqs     []*Request
	marks    []report.Conn // the server's record of the same connection
	from, to float64       // the time the lane has anything to show
	// A lane of a Digest holds no requests: n counts them, and ents (canvas) or cells
	// (SVG buckets) are what the page draws of them.
	n     int
	ents  []entry
	cells []cell
}

// f1 formats a coordinate or a time with at most one decimal.
func f1(b []byte, v float64) []byte {
	v = math.Round(v*10) / 10
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// laneOrder groups a run's requests into one lane per client connection, with the server's
// closes of each, in dial order (the requests that got no connection last), and returns
// them with the time the axis must cover. A digest has its lanes laid already.
func laneOrder(reqs []Request, conns []report.Conn, dg *Digest, pl Plan) ([]*lane, float64) {
	if dg != nil {
		return dg.Lanes, dg.Span
	}
	lanes := map[uint64]*lane{}
	span := 1.0
	for i := range reqs {
		r := &reqs[i]
		l := lanes[r.Conn]
		if l == nil {
			l = &lane{conn: r.Conn, from: r.StartMs}
			lanes[r.Conn] = l
		}
		l.reqs = append(l.reqs, r)
		l.from, l.to = min(l.from, r.StartMs), max(l.to, r.StartMs+r.LatencyMs)
		span = max(span, r.StartMs+r.LatencyMs)
	}
	return sortLanes(lanes, conns, pl, span)
}

// sortLanes adds the server's closes to their lanes and returns the lanes in dial order
// (the requests that got no connection last) with the time the axis must cover.
func sortLanes(lanes map[uint64]*lane, conns []report.Conn, pl Plan, span float64) ([]*lane, float64) {
	for _, c := range conns {
		if c.ClientConn == 0 || c.ClosedMs == nil {
			continue
		}
		if l := lanes[c.ClientConn]; l != nil {
			l.marks = append(l.marks, c)
			l.to = max(l.to, *c.ClosedMs+pl.RTTMs/2)
			span = max(span, l.to)
		}
	}
	order := make([]*lane, 0, len(lanes))
	for _, l := range lanes {
		order = append(order, l)
	}
	// Connection ids are given in dial order; the requests that got none go last.
	slices.SortFunc(order, func(a, b *lane) int {
		if (a.conn == 0) != (b.conn == 0) {
			if a.conn == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.conn, b.conn)
	})
	return order, span
}

// Build draws a run's lanes: from its requests held one by one (reqs, with the server's
// connection records conns), or, when dg is not nil, from the digest of a run too large to
// hold (reqs is then empty). Above CanvasLanes lanes the page paints them on a canvas from
// the requests as data; else each request is an SVG bar, or above MaxDrawn requests each
// lane a row of time buckets.
func Build(reqs []Request, conns []report.Conn, dg *Digest, pl Plan) Timeline {
	tl := Timeline{}
	order, span := laneOrder(reqs, conns, dg, pl)
	tl.SpanMs = span
	x := func(t float64) float64 { return t / span * plotW }
	pauses := findPauses(reqs, pl) // drawn behind the lanes
	count := len(reqs)
	if dg != nil {
		pauses, count = dg.Pauses, dg.N
	}
	if len(order) > CanvasLanes {
		canvasTimeline(&tl, dg, order, pl, span)
		tl.Axis = template.HTML(axis(span, pauses, x))
		return tl
	}
	g := laneGeometry(len(order))
	g.x = x
	tl.Height = int(g.laneH*float64(len(order))) + 1
	g.aggregate = count > MaxDrawn
	g.bucketMs = span / 400
	if g.aggregate {
		tl.Aggregated = "This run has " + strconv.Itoa(count) + " requests, more than " +
			strconv.Itoa(MaxDrawn) + ": each lane shows buckets of " + strconv.FormatFloat(g.bucketMs, 'f', 1, 64) +
			" ms; the darker a bucket, the more requests started in it; red buckets hold a failure."
	}

	b := svgOpen(nil, tl.Height, span, g)
	tl.Pauses = len(pauses)
	b = appendPauses(b, pauses, x, tl.Height)
	var lb []byte
	lb = append(lb, `<div class="labels" style="height:`...)
	lb = strconv.AppendInt(lb, int64(tl.Height), 10)
	lb = append(lb, `px">`...)
	for i, l := range order {
		b = appendLane(b, &tl, i, l, pl, g)
		if g.laneH >= 9 {
			lb = appendLabel(lb, l, g.laneH)
		}
	}
	b = append(b, `</svg>`...)
	lb = append(lb, `</div>`...)
	slices.Sort(tl.Classes)
	tl.SVG = template.HTML(b) // numbers, fixed class names and escaped text only (see appendBar)
	tl.Labels = template.HTML(lb)
	tl.Axis = template.HTML(axis(span, pauses, x))
	return tl
}

// laneLayout is how the SVG timeline lays its lanes out.
type laneLayout struct {
	laneH, barH, gap float64
	aggregate        bool    // draw buckets instead of one bar per request
	bucketMs         float64 // a bucket's width when aggregated
	x                func(float64) float64
}

// laneGeometry sizes n lanes: 14 px each, squeezed to fit 700 px past 50 lanes, without
// a gap between bars once a lane is under 5 px.
func laneGeometry(n int) laneLayout {
	g := laneLayout{laneH: 14}
	if n > 50 {
		g.laneH = max(1, math.Floor(700/float64(n)))
	}
	g.barH, g.gap = g.laneH-2, 1.0
	if g.laneH < 5 {
		g.barH, g.gap = g.laneH, 0
	}
	return g
}

// svgOpen opens the timeline's <svg> with the sizes the page's script reads.
func svgOpen(b []byte, height int, span float64, g laneLayout) []byte {
	b = append(b, `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="none" viewBox="0 0 `...)
	b = strconv.AppendInt(b, plotW, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(height), 10)
	b = append(b, `" height="`...)
	b = strconv.AppendInt(b, int64(height), 10)
	b = append(b, `" data-span="`...)
	b = f1(b, span)
	b = append(b, `" style="--bar-h:`...)
	b = f1(b, g.barH)
	b = append(b, `px" data-laneh="`...)
	b = f1(b, g.laneH)
	b = append(b, `" data-gap="`...)
	b = f1(b, g.gap)
	return append(b, `">`...)
}

// appendPauses draws the pauses between bursts as full-height bands.
func appendPauses(b []byte, pauses [][2]float64, x func(float64) float64, height int) []byte {
	for _, p := range pauses {
		b = append(b, `<rect class="pause" x="`...)
		b = f1(b, x(p[0]))
		b = append(b, `" y="0" width="`...)
		b = f1(b, max(x(p[1])-x(p[0]), 0.5))
		b = append(b, `" height="`...)
		b = strconv.AppendInt(b, int64(height), 10)
		b = append(b, `" data-from="`...)
		b = f1(b, p[0])
		b = append(b, `" data-to="`...)
		b = f1(b, p[1])
		b = append(b, `"></rect>`...)
	}
	return b
}

// appendLane draws lane i (one connection) with its requests and marks, counting bars,
// failures and their classes in tl.
func appendLane(b []byte, tl *Timeline, i int, l *lane, pl Plan, g laneLayout) []byte {
	cls := "lane"
	if l.conn == 0 {
		cls = "lane-none" // requests that failed before any connection: not a connection
	} else {
		tl.Lanes++
	}
	b = append(b, `<g class="`...)
	b = append(b, cls...)
	b = append(b, `" data-conn="`...)
	b = strconv.AppendUint(b, l.conn, 10)
	b = append(b, `" data-from="`...)
	b = f1(b, l.from)
	b = append(b, `" data-to="`...)
	b = f1(b, l.to)
	b = append(b, `" transform="translate(0,`...)
	b = f1(b, float64(i)*g.laneH+g.gap) // bars sit at y=0 in their lane: no y attribute on thousands of them
	b = append(b, `)">`...)
	if i%2 == 1 && g.laneH >= 4 {
		b = append(b, `<rect class="stripe" x="0" y="-`...)
		b = f1(b, g.gap)
		b = append(b, `" width="`...)
		b = strconv.AppendInt(b, plotW, 10)
		b = append(b, `" height="`...)
		b = f1(b, g.laneH)
		b = append(b, `"></rect>`...)
	}
	if g.aggregate {
		b = appendBuckets(b, l, g.bucketMs, g.x, g.barH)
	} else {
		for _, r := range l.reqs {
			k := kindOf(&r.Request)
			tl.Bars++
			if k == KindFailed {
				tl.Failed++
				if !slices.Contains(tl.Classes, r.Class) {
					tl.Classes = append(tl.Classes, r.Class)
				}
			}
			if k == KindFailed || k == KindRetried || k == KindHidden {
				tl.Marked++
			}
			b = appendBar(b, r, k, g.x)
		}
	}
	for _, c := range l.marks {
		b = appendMark(b, c, pl, g.x, g.gap, g.laneH)
	}
	return append(b, `</g>`...)
}

// appendLabel writes a lane's label ("c12", or "none" for requests with no connection).
func appendLabel(lb []byte, l *lane, laneH float64) []byte {
	lb = append(lb, `<div style="height:`...)
	lb = f1(lb, laneH)
	lb = append(lb, `px;line-height:`...)
	lb = f1(lb, laneH)
	lb = append(lb, `px">`...)
	if l.conn == 0 {
		lb = append(lb, "none"...)
	} else {
		lb = append(lb, 'c')
		lb = strconv.AppendUint(lb, l.conn, 10)
	}
	return append(lb, `</div>`...)
}

// appendBar draws one request. The hover text is assembled by the page's script from the
// data attributes, so each bar costs about 100 bytes: data-start and data-end (ms from the
// start of the run), data-ph (connect, TLS, first byte, then any phase a newer kalab
// wrote), and for a failure data-err and the server's close of its connection (data-sc).
func appendBar(b []byte, r *Request, kind string, x func(float64) float64) []byte {
	x0 := x(r.StartMs)
	w := max(x(r.StartMs+r.LatencyMs)-x0, 0.8)
	b = append(b, `<rect class="bar `...)
	b = append(b, kind...)
	b = append(b, `" x="`...)
	b = f1(b, x0)
	b = append(b, `" width="`...)
	b = strconv.AppendFloat(b, math.Round(w*100)/100, 'f', -1, 64)
	b = append(b, `" data-seq="`...)
	b = strconv.AppendInt(b, int64(r.Seq), 10)
	b = append(b, `" data-start="`...)
	b = f1(b, r.StartMs)
	b = append(b, `" data-end="`...)
	b = f1(b, r.StartMs+r.LatencyMs)
	if r.ConnectMs != 0 || r.TLSMs != 0 || r.FirstByteMs != 0 || len(r.Extra) > 0 {
		b = append(b, `" data-ph="`...)
		b = f1(b, r.ConnectMs)
		b = append(b, ',')
		b = f1(b, r.TLSMs)
		b = append(b, ',')
		b = f1(b, r.FirstByteMs)
		for _, f := range r.Extra {
			b = append(b, ',')
			b = append(b, template.HTMLEscapeString(strings.TrimSuffix(f.Name, "_ms"))...)
			b = append(b, '=')
			b = f1(b, f.Value)
		}
	}
	if r.Attempts > 1 {
		b = append(b, `" data-att="`...)
		b = strconv.AppendInt(b, int64(r.Attempts), 10)
	}
	if r.HiddenRetries > 0 {
		b = append(b, `" data-hid="`...)
		b = strconv.AppendInt(b, int64(r.HiddenRetries), 10)
	}
	if r.Status != 0 && r.Status != 200 {
		b = append(b, `" data-status="`...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
	}
	if r.Class != "" {
		if r.Reused {
			b = append(b, `" data-reused="1`...)
		}
		b = append(b, `" data-err="`...)
		b = append(b, template.HTMLEscapeString(r.Class+": "+r.Error)...)
		if r.ServerClosedMs != nil {
			b = append(b, `" data-sc="`...)
			b = f1(b, *r.ServerClosedMs)
			b = append(b, ',')
			b = append(b, template.HTMLEscapeString(r.ServerCloseReason)...)
		}
	}
	b = append(b, `"/>`...) // self-closing is valid for SVG elements in HTML
	return b
}

// Ms writes a time in ms as the page does: whole from 100 ms, else with one decimal.
func Ms(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

// appendMark draws a close on its lane: by the server (and the arrival of its FIN at the
// client RTT/2 later, as the link delays it like data; QUIC sends no FIN), or by the client. Marks are short
// paths whose hover text the page's script writes from data-t and data-reason: a run of
// 5,000 connections has 10,000 of them.
func appendMark(b []byte, c report.Conn, pl Plan, x func(float64) float64, gap, laneH float64) []byte {
	t := *c.ClosedMs
	mark := func(cls string, at float64, reason bool) {
		b = append(b, `<path class="mark `...)
		b = append(b, cls...)
		b = append(b, `" d="M`...)
		b = f1(b, x(at))
		b = append(b, ' ', '-')
		b = f1(b, gap)
		b = append(b, 'v')
		b = f1(b, laneH)
		b = append(b, `" data-t="`...)
		b = f1(b, at)
		if reason {
			b = append(b, `" data-reason="`...)
			b = append(b, template.HTMLEscapeString(c.Reason)...)
		}
		b = append(b, `"/>`...)
	}
	if c.ClosedBy == report.ClosedByServer {
		mark("srvclose", t, true)
		if pl.RTTMs > 0 && !pl.HTTP3 {
			mark("fin", t+pl.RTTMs/2, false)
		}
	} else {
		mark("cliclose", t, true)
	}
	return b
}

func appendBuckets(b []byte, l *lane, bucketMs float64, x func(float64) float64, h float64) []byte {
	cells := l.cells // a Digest's lane has them counted already
	if cells == nil {
		cells = make([]cell, 401)
		for _, r := range l.reqs {
			c := &cells[min(max(int(r.StartMs/bucketMs), 0), 400)]
			c.n++
			if r.Class != "" {
				c.failed++
			}
		}
	}
	top := 1
	for _, c := range cells {
		top = max(top, c.n)
	}
	for k, c := range cells {
		if c.n == 0 {
			continue
		}
		b = append(b, `<rect class="bucket`...)
		if c.failed > 0 {
			b = append(b, ` failed`...)
		}
		b = append(b, `" x="`...)
		b = f1(b, x(float64(k)*bucketMs))
		b = append(b, `" width="`...)
		b = f1(b, max(x(bucketMs), 0.8))
		b = append(b, `" height="`...)
		b = f1(b, h)
		b = append(b, `" fill-opacity="`...)
		b = strconv.AppendFloat(b, 0.25+0.75*float64(c.n)/float64(top), 'f', 2, 64)
		b = append(b, `" data-n="`...)
		b = strconv.AppendInt(b, int64(c.n), 10)
		b = append(b, `" data-failed="`...)
		b = strconv.AppendInt(b, int64(c.failed), 10)
		b = append(b, `" data-tip="`...)
		b = append(b, template.HTMLEscapeString(strconv.Itoa(c.n)+" request(s) started in "+Ms(float64(k)*bucketMs)+
			" – "+Ms(float64(k+1)*bucketMs)+" on connection "+strconv.FormatUint(l.conn, 10)+", "+strconv.Itoa(c.failed)+" failed")...)
		b = append(b, `"></rect>`...)
	}
	return b
}

// findPauses returns the gaps between bursts, [from, to] in ms: stretches in which no
// request was in flight that are longer than half the plan's shortest pause.
func findPauses(reqs []Request, pl Plan) [][2]float64 {
	if pl.Burst <= 0 || pl.PauseMinMs <= 0 || len(reqs) == 0 {
		return nil
	}
	idx := make([]int, len(reqs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(reqs[a].StartMs, reqs[b].StartMs) })
	var out [][2]float64
	end := reqs[idx[0]].StartMs + reqs[idx[0]].LatencyMs
	for _, i := range idx[1:] {
		r := &reqs[i]
		if r.StartMs-end > pl.PauseMinMs/2 {
			out = append(out, [2]float64{end, r.StartMs})
		}
		end = max(end, r.StartMs+r.LatencyMs)
	}
	return out
}

// axis draws the bursts (dark) and pauses (light) as a strip under the lanes, so the
// load's shape reads on the time axis, and time ticks as HTML (text in a stretched SVG
// would be distorted). The page's script redraws the ticks when the timeline zooms.
func axis(span float64, pauses [][2]float64, x func(float64) float64) string {
	var b []byte
	b = append(b, `<div class="axis"><svg class="strip" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="none" viewBox="0 0 `...)
	b = strconv.AppendInt(b, plotW, 10)
	b = append(b, ` 6" height="6"><rect class="loadstrip" x="0" y="0" width="`...)
	b = strconv.AppendInt(b, plotW, 10)
	b = append(b, `" height="6"></rect>`...)
	for _, p := range pauses {
		b = append(b, `<rect class="pausestrip" x="`...)
		b = f1(b, x(p[0]))
		b = append(b, `" y="0" width="`...)
		b = f1(b, max(x(p[1])-x(p[0]), 0.5))
		b = append(b, `" height="6"></rect>`...)
	}
	b = append(b, `</svg><div class="ticks">`...)
	step := niceStep(span / 8)
	for t := 0.0; t <= span; t += step {
		b = append(b, `<span style="left:`...)
		b = strconv.AppendFloat(b, math.Round(t/span*10000)/100, 'f', -1, 64)
		b = append(b, `%">`...)
		b = append(b, tickLabel(t, step)...)
		b = append(b, `</span>`...)
	}
	b = append(b, `</div></div>`...)
	return string(b)
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(t, step float64) string {
	if step >= 1000 {
		return strconv.FormatFloat(t/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(math.Round(t*1000)/1000, 'f', -1, 64) + " ms"
}
