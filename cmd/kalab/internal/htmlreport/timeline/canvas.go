package timeline

import (
	"cmp"
	"encoding/json"
	"html/template"
	"math"
	"slices"
	"strconv"

	"github.com/kalab-dev/kalab/engine/report"
)

// CanvasLanes is how many lanes a run may have for its timeline to be an SVG element per
// request; above it the page paints the lanes on a canvas from the run's requests as data,
// only the lanes in view and at most one bar per pixel of a lane (an SVG of
// 3,500 lanes took 90-294 ms per wheel zoom).
const CanvasLanes = 1000

// CanvasData is what the page's script paints a canvas timeline from. R holds five
// numbers per request, sorted by lane then start: lane index, start, latency (ms, one
// decimal), kind (KindCodes) and sequence number. Marks holds three per close: lane, time,
// 0 for the server's close, 1 for its FIN at the client, 2 for the client's close.
type CanvasData struct {
	Span  float64           `json:"span"`
	LaneH float64           `json:"lane_h"`
	Conns []uint64          `json:"conns"`
	R     []float64         `json:"r"`
	Marks []float64         `json:"marks"`
	Err   map[string]string `json:"err"` // request index in R/5 -> error text and the server's close
}

// KindCodes number the bar kinds in CanvasData.R, as the page's script reads them.
var KindCodes = map[string]float64{KindNew: 0, KindReused: 1, KindFailed: 2, KindRetried: 3, KindHidden: 4}

// canvasTimeline fills tl for a run of many lanes: the canvas, its data, and the counts.
func canvasTimeline(tl *Timeline, dg *Digest, order []*lane, pl Plan, span float64) {
	laneH := max(2, math.Floor(700/float64(len(order))))
	d := CanvasData{Span: round1(span), LaneH: laneH, Err: map[string]string{}, Conns: []uint64{}, R: []float64{}, Marks: []float64{}}
	if dg != nil {
		tl.Aggregated = "This run has " + strconv.Itoa(dg.N) + " requests, more than " + strconv.Itoa(MaxDrawn) +
			": successful requests of one kind on a lane less than " + strconv.FormatFloat(dg.GapMs, 'f', 1, 64) +
			" ms apart are painted as one bar (its hover text says how many); failed, retried and re-sent requests are kept one by one."
	}
	for li, l := range order {
		if l.conn != 0 {
			tl.Lanes++
		}
		d.Conns = append(d.Conns, l.conn)
		ents := l.ents
		if dg == nil {
			ents = laneEntries(l)
		}
		for _, e := range ents {
			k := e.kind
			tl.Bars += max(e.n, 1)
			if k == KindFailed || k == KindRetried || k == KindHidden {
				tl.Marked++
			}
			seq := float64(e.seq)
			if e.n > 1 {
				seq = -float64(e.n)
			}
			if k == KindFailed {
				tl.Failed++
				d.Err[strconv.Itoa(len(d.R)/5)] = e.err
				if !slices.Contains(tl.Classes, e.class) {
					tl.Classes = append(tl.Classes, e.class)
				}
			}
			d.R = append(d.R, float64(li), round1(e.start), round1(e.lat), KindCodes[k], seq)
		}
		for _, c := range l.marks {
			t := *c.ClosedMs
			if c.ClosedBy == report.ClosedByServer {
				d.Marks = append(d.Marks, float64(li), round1(t), 0)
				if pl.RTTMs > 0 && !pl.HTTP3 { // QUIC sends no FIN
					d.Marks = append(d.Marks, float64(li), round1(t+pl.RTTMs/2), 1)
				}
			} else {
				d.Marks = append(d.Marks, float64(li), round1(t), 2)
			}
		}
	}
	slices.Sort(tl.Classes)
	data, _ := json.Marshal(d) // numbers and strings only; <, > and & come out escaped
	h := min(760, laneH*float64(len(order)))
	tl.Canvas = true
	tl.Height = int(laneH * float64(len(order)))
	tl.SVG = template.HTML(`<div class="spacer" style="height:` + strconv.Itoa(tl.Height) + `px"><canvas class="timeline" height="` +
		strconv.Itoa(int(h)) + `" style="height:` + strconv.Itoa(int(h)) + `px"></canvas></div><script type="application/json" class="tldata">` +
		string(data) + `</script>`)
}

// laneEntries are a held lane's requests as the page paints them, each as itself, sorted
// by start: the page finds a lane's requests in a window by binary search on their starts.
func laneEntries(l *lane) []entry {
	slices.SortStableFunc(l.reqs, func(a, b *Request) int { return cmp.Compare(a.StartMs, b.StartMs) })
	out := make([]entry, len(l.reqs))
	for i, r := range l.reqs {
		out[i] = entry{start: r.StartMs, lat: r.LatencyMs, kind: kindOf(&r.Request), seq: r.Seq}
		if out[i].kind == KindFailed {
			out[i].err, out[i].class = errText(r), r.Class
		}
	}
	return out
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// errText is a failed request's error and, when known, the server's close of its
// connection ("at,reason"), as the SVG bar's data-err and data-sc hold them.
func errText(r *Request) string {
	s := r.Class + ": " + r.Error
	if r.ServerClosedMs != nil {
		s += "\x00" + strconv.FormatFloat(round1(*r.ServerClosedMs), 'f', -1, 64) + "," + r.ServerCloseReason
	}
	return s
}
