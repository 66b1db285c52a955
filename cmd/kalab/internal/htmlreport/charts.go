package htmlreport

import (
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
)

// histogram draws the latency distribution with reused, new and failed requests stacked
// in each bin. Bins are logarithmic when latencies span more than a factor of 4 (a run
// mixes 1-RTT reused and 3-RTT new requests), else linear; heights are on a square-root
// scale, so 15 failures still show beside 900 reused requests.
func histogram(reqs []timeline.Request) template.HTML {
	if len(reqs) == 0 {
		return ""
	}
	h := histCounts{lo: math.Inf(1)}
	for i := range reqs {
		v := max(reqs[i].LatencyMs, 0.01)
		h.lo, h.hi = min(h.lo, v), max(h.hi, v)
	}
	for i := range reqs {
		h.add(&reqs[i])
	}
	return h.draw()
}

const histBins = 48

// histCounts are a histogram's bins: the latency range (lo, hi) is known before the first
// request is counted, so that a run read as a stream counts in one pass.
type histCounts struct {
	lo, hi float64
	n      int
	counts [histBins][3]int // reused, new, failed
}

func (h *histCounts) logBins() bool { return h.hi/h.lo > 4 }

// pos is where latency v falls along the axis, 0..1.
func (h *histCounts) pos(v float64) float64 {
	v = max(v, 0.01)
	if h.hi <= h.lo {
		return 0.5
	}
	if h.logBins() {
		return math.Log(v/h.lo) / math.Log(h.hi/h.lo)
	}
	return (v - h.lo) / (h.hi - h.lo)
}

func (h *histCounts) add(r *timeline.Request) {
	k := min(int(h.pos(r.LatencyMs)*histBins), histBins-1)
	h.n++
	switch {
	case r.Class != "":
		h.counts[k][2]++
	case r.Reused:
		h.counts[k][0]++
	default:
		h.counts[k][1]++
	}
}

func (hc *histCounts) draw() template.HTML {
	if hc.n == 0 {
		return ""
	}
	const bins, w, h, left, bottom = histBins, 640.0, 200.0, 44.0, 34.0
	lo, hi, logBins, counts := hc.lo, hc.hi, hc.logBins(), &hc.counts
	at := func(f float64) float64 { // the latency at a fraction of the axis
		if logBins {
			return lo * math.Pow(hi/lo, f)
		}
		return lo + f*(hi-lo)
	}
	top := 1
	for _, c := range counts {
		top = max(top, c[0]+c[1]+c[2])
	}
	var b strings.Builder
	b.WriteString(`<svg class="hist" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `)
	b.WriteString(strconv.FormatFloat(w+left+10, 'f', -1, 64) + " " + strconv.FormatFloat(h+bottom+10, 'f', -1, 64) + `">`)
	// Grid lines at the root scale's quarter marks, under the bars.
	for _, q := range []int{2, 1} {
		v := int(math.Round(float64(top) * float64(q*q) / 16)) // the root scale's quarter marks
		y := h + 5 - float64(q)/4*h
		if v > 0 && v < top {
			b.WriteString(`<text class="lbl" x="` + fmtf(left-4) + `" y="` + fmtf(y+4) + `" text-anchor="end">` + strconv.Itoa(v) + `</text>`)
			b.WriteString(`<line class="grid" x1="` + fmtf(left) + `" y1="` + fmtf(y) + `" x2="` + fmtf(left+w) + `" y2="` + fmtf(y) + `"></line>`)
		}
	}
	bw := w / bins
	names := [3]string{"reused", "new", "failed"}
	for k, c := range counts {
		y := h + 5
		cum := 0
		for s := 0; s < 3; s++ {
			if c[s] == 0 {
				continue
			}
			// Stacked on the square-root scale: each part is the difference of the roots.
			bh := (math.Sqrt(float64(cum+c[s])) - math.Sqrt(float64(cum))) / math.Sqrt(float64(top)) * h
			bh = max(bh, 2)
			cum += c[s]
			y -= bh
			b.WriteString(`<rect class="h ` + names[s] + `" x="` + fmtf(left+float64(k)*bw+0.5) + `" y="` + fmtf(y) +
				`" width="` + fmtf(bw-1) + `" height="` + fmtf(bh) + `" data-tip="` +
				template.HTMLEscapeString(strconv.Itoa(c[s])+" "+names[s]+" request(s) of "+ms(at(float64(k)/bins))+" – "+ms(at(float64(k+1)/bins))) + `"></rect>`)
		}
	}
	// Axes: counts on the left, latency below.
	b.WriteString(`<line class="ax" x1="` + fmtf(left) + `" y1="` + fmtf(h+5) + `" x2="` + fmtf(left+w) + `" y2="` + fmtf(h+5) + `"></line>`)
	b.WriteString(`<text class="lbl" x="` + fmtf(left-4) + `" y="12" text-anchor="end">` + strconv.Itoa(top) + `</text>`)
	b.WriteString(`<text class="lbl" x="` + fmtf(left-4) + `" y="` + fmtf(h+5) + `" text-anchor="end">0</text>`)
	latencyTicks(&b, lo, hi, left, w, h+22, at)
	scale := "linear"
	if logBins {
		scale = "log scale"
	}
	b.WriteString(`<text class="lbl" x="` + fmtf(left+w) + `" y="` + fmtf(h+bottom+6) + `" text-anchor="end">latency (` + scale + `); count on a square-root scale</text>`)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers and escaped text only
}

// latencyTicks writes the histogram's latency labels along its axis: seven, each label
// once (a range narrower than their precision repeats none), and one under the middle
// when every request took the same time.
func latencyTicks(b *strings.Builder, lo, hi, left, w, y float64, at func(float64) float64) {
	prev := ""
	for i := 0; i <= 6; i++ {
		f := float64(i) / 6
		if hi <= lo && i != 3 {
			continue // one latency: pos puts its bar in the middle, under one tick
		}
		label := ms(at(f))
		if label == prev {
			continue // a range narrower than the labels' precision: each label once
		}
		prev = label
		anchor := "middle"
		if i == 6 {
			anchor = "end"
		}
		b.WriteString(`<text class="lbl" x="` + fmtf(left+f*w) + `" y="` + fmtf(y) + `" text-anchor="` + anchor + `">` + label + `</text>`)
	}
}

// phase is one part of a request's time.
type phase struct {
	Name, Class string
	Ms          float64
}

// phaseRow is the mean split of one kind of request.
type phaseRow struct {
	Label  string
	N      int
	Phases []phase
	Total  float64
}

// phaseSplit averages the phases of successful new and reused requests. The request line
// carries connect and TLS as durations and first_byte as the time from the start to the
// first byte; a queue phase is any field whose name holds "queue" (a newer kalab's queue
// wait). What precedes the first byte beyond those is the wait for the server (the request
// crossing the link and the response coming back), and what follows it is the body.
func phaseSplit(reqs []timeline.Request) []phaseRow {
	var a phaseAcc
	for i := range reqs {
		a.add(&reqs[i])
	}
	return a.rows()
}

// phaseSum is the phases of one kind of request, summed.
type phaseSum struct {
	n                                   int
	queue, connect, tls, wait, transfer float64
}

// phaseAcc sums the phases of successful new and reused requests, one request at a time.
type phaseAcc [2]phaseSum // new, reused

func (a *phaseAcc) add(r *timeline.Request) {
	if r.Class != "" {
		return
	}
	k := 0
	if r.Reused {
		k = 1
	}
	q := 0.0
	for _, f := range r.Extra {
		if strings.Contains(f.Name, "queue") {
			q += f.Value
		}
	}
	before := q + r.ConnectMs + r.TLSMs
	wait := r.FirstByteMs - before
	if wait < 0 { // first byte measured from after the handshake
		wait = r.FirstByteMs
	}
	a[k].n++
	a[k].queue += q
	a[k].connect += r.ConnectMs
	a[k].tls += r.TLSMs
	a[k].wait += wait
	a[k].transfer += max(r.LatencyMs-before-wait, 0)
}

func (a *phaseAcc) rows() []phaseRow {
	var out []phaseRow
	for k, label := range []string{"new connection", "reused connection"} {
		if a[k].n == 0 {
			continue
		}
		n := float64(a[k].n)
		row := phaseRow{Label: label, N: a[k].n, Phases: []phase{
			{"queue", "queue", a[k].queue / n}, {"connect", "connect", a[k].connect / n}, {"TLS", "tls", a[k].tls / n},
			{"to first byte", "wait", a[k].wait / n}, {"body", "transfer", a[k].transfer / n}}}
		for _, p := range row.Phases {
			row.Total += p.Ms
		}
		out = append(out, row)
	}
	return out
}

// phaseChart draws the rows as stacked horizontal bars on one scale.
func phaseChart(rows []phaseRow) template.HTML {
	if len(rows) == 0 {
		return ""
	}
	const w, left, rowH = 500.0, 170.0, 34.0
	top := 0.0
	for _, r := range rows {
		top = max(top, r.Total)
	}
	if top <= 0 {
		top = 1
	}
	var b strings.Builder
	b.WriteString(`<svg class="phases" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ` + fmtf(left+w+90) + " " + fmtf(rowH*float64(len(rows))+6) + `">`)
	for i, r := range rows {
		y := float64(i)*rowH + 4
		b.WriteString(`<text class="lbl" x="` + fmtf(left-6) + `" y="` + fmtf(y+17) + `" text-anchor="end">` +
			template.HTMLEscapeString(r.Label) + ` (` + strconv.Itoa(r.N) + `)</text>`)
		x := left
		for _, p := range r.Phases {
			if p.Ms <= 0 {
				continue
			}
			pw := p.Ms / top * w
			b.WriteString(`<rect class="ph ` + p.Class + `" x="` + fmtf(x) + `" y="` + fmtf(y) + `" width="` + fmtf(pw) +
				`" height="24" data-tip="` + template.HTMLEscapeString(r.Label+": "+p.Name+" "+ms(p.Ms)+" on average") + `"></rect>`)
			if pw > 46 {
				b.WriteString(`<text class="in" x="` + fmtf(x+pw/2) + `" y="` + fmtf(y+16) + `" text-anchor="middle">` + ms(p.Ms) + `</text>`)
			}
			x += pw
		}
		b.WriteString(`<text class="lbl" x="` + fmtf(x+6) + `" y="` + fmtf(y+17) + `">` + ms(r.Total) + `</text>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers and escaped text only
}

// ms writes a time in ms as the whole page does (the timeline's way).
func ms(v float64) string { return timeline.Ms(v) }

func fmtf(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
