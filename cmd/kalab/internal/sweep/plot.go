package sweep

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH               = 760.0, 420.0
	padL, padR, padT, padB     = 70.0, 20.0, 30.0, 50.0
	innerW, innerH             = plotW - padL - padR, plotH - padT - padB
	safeColor, unsafeColor     = "#1a7f37", "#cf222e"
	boundaryFill, predictColor = "#fff1b8", "#0969da"
)

// Plot writes a standalone HTML page with an SVG of the metric against the parameter:
// each point's span over its seeds (green safe, red unsafe, grey without a verdict), each
// boundary's bracket shaded (id boundary-N) and the geometry's prediction as a dashed line
// (id prediction).
func Plot(w io.Writer, rec *Record, format func(float64) string) error {
	var b strings.Builder
	ymax := 1.0
	for _, st := range rec.Steps {
		if st.MetricMax != nil {
			ymax = math.Max(ymax, *st.MetricMax)
		}
	}
	ymax = niceCeil(ymax)
	x := func(v float64) float64 { return padL + (v-rec.Lo)/(rec.Hi-rec.Lo)*innerW }
	y := func(v float64) float64 { return padT + innerH - v/ymax*innerH }
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kalab sweep: %s</title>\n", esc(rec.Param))
	b.WriteString("<style>body{font:14px system-ui,sans-serif;margin:24px;color:#1f2328}svg text{font:12px system-ui,sans-serif}p{max-width:760px}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s over %s..%s</h1>\n", esc(rec.Param), esc(format(rec.Lo)), esc(format(rec.Hi)))
	fmt.Fprintf(&b, "<p>%s, run %s: %s per point over seeds %v; verdict: <code>%s</code>.</p>\n", esc(rec.File), esc(rec.Run), esc(rec.Metric), rec.Seeds, esc(rec.Check))
	fmt.Fprintf(&b, "<svg id=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\">\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, "<rect x=\"0\" y=\"0\" width=\"%g\" height=\"%g\" fill=\"#ffffff\"/>\n", plotW, plotH)
	for i, br := range rec.Brackets {
		lo, hi := math.Min(br.Safe, br.Unsafe), math.Max(br.Safe, br.Unsafe)
		wd := math.Max(x(hi)-x(lo), 2)
		fmt.Fprintf(&b, "<rect id=\"boundary-%d\" class=\"boundary\" x=\"%.1f\" y=\"%g\" width=\"%.1f\" height=\"%g\" fill=\"%s\" stroke=\"#d4a72c\"><title>boundary: safe %s, unsafe %s</title></rect>\n",
			i, x(lo), padT, wd, innerH, boundaryFill, esc(format(br.Safe)), esc(format(br.Unsafe)))
	}
	axes(&b, rec, format, x, y, ymax)
	if p := rec.Prediction; p != nil && p.Bound >= rec.Lo && p.Bound <= rec.Hi {
		fmt.Fprintf(&b, "<line id=\"prediction\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\" stroke=\"%s\" stroke-dasharray=\"6 4\"><title>geometry: %s</title></line>\n",
			x(p.Bound), x(p.Bound), padT, padT+innerH, predictColor, esc(format(p.Bound)))
	}
	for _, st := range rec.Steps {
		color := map[Verdict]string{Safe: safeColor, Unsafe: unsafeColor}[st.Verdict]
		if color == "" {
			color = "#8c959f"
		}
		if st.MetricMin == nil {
			fmt.Fprintf(&b, "<circle class=\"point unjudged\" cx=\"%.1f\" cy=\"%g\" r=\"4\" fill=\"none\" stroke=\"%s\"><title>%s: no verdict</title></circle>\n", x(st.Value), padT+innerH, color, esc(format(st.Value)))
			continue
		}
		lo, hi := *st.MetricMin, *st.MetricMax
		fmt.Fprintf(&b, "<line class=\"span\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n", x(st.Value), x(st.Value), y(lo), y(hi), color)
		fmt.Fprintf(&b, "<circle class=\"point %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>%s: %s, %s %s–%s (%d pass, %d fail, %d noisy)</title></circle>\n",
			st.Verdict, x(st.Value), y(hi), color, esc(format(st.Value)), st.Verdict, esc(rec.Metric), num(lo), num(hi), st.Pass, st.Fail, st.Noisy)
	}
	b.WriteString("</svg>\n")
	for _, s := range rec.Sentences {
		fmt.Fprintf(&b, "<p class=\"sentence\">%s</p>\n", esc(s))
	}
	if p := rec.Prediction; p != nil {
		fmt.Fprintf(&b, "<p class=\"geometry\">Geometry (dashed line): %s.</p>\n", esc(p.Rule))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// axes draws the frame, the ticks and the labels.
func axes(b *strings.Builder, rec *Record, format func(float64) string, x, y func(float64) float64, ymax float64) {
	fmt.Fprintf(b, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#57606a\"/>\n", padL, padT, innerW, innerH)
	for i := 0; i <= 5; i++ {
		v := rec.Lo + (rec.Hi-rec.Lo)*float64(i)/5
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", x(v), padT+innerH+18, html.EscapeString(format(v)))
		m := ymax * float64(i) / 5
		fmt.Fprintf(b, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", padL-8, y(m)+4, num(m))
		fmt.Fprintf(b, "<line x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eaeef2\"/>\n", padL, padL+innerW, y(m), y(m))
	}
	fmt.Fprintf(b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", padL+innerW/2, plotH-10, html.EscapeString(rec.Param))
	fmt.Fprintf(b, "<text x=\"16\" y=\"%g\" text-anchor=\"middle\" transform=\"rotate(-90 16 %g)\">%s</text>\n", padT+innerH/2, padT+innerH/2, html.EscapeString(rec.Metric))
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
