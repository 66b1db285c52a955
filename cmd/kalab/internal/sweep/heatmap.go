package sweep

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// MapRecord is the closing line of a two-parameter sweep's sweep.jsonl.
type MapRecord struct {
	Record       string       `json:"record"` // "sweep_map"
	KalabVersion string       `json:"kalab_version"`
	File         string       `json:"file"`
	Run          string       `json:"run"`
	Param        string       `json:"param"`  // x
	Param2       string       `json:"param2"` // y
	Xs           []float64    `json:"xs"`
	Ys           []float64    `json:"ys"`
	Seeds        []int64      `json:"seeds"`
	Budget       int          `json:"budget"`
	Runs         int          `json:"runs"`
	OutOfBudget  bool         `json:"out_of_budget"`
	Check        string       `json:"check"`
	Metric       string       `json:"metric"`
	Cells        [][]StepLine `json:"cells"` // [y][x]
	Sentences    []string     `json:"sentences"`
	// Interrupted: the map was stopped before every cell ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// FillMap completes the record from a map: the cells and one sentence per row.
func (rec *MapRecord) FillMap(m *Map, fx, fy func(float64) string) {
	rec.Xs, rec.Ys, rec.Runs, rec.OutOfBudget = m.Xs, m.Ys, m.Runs, m.OutOfRun
	rec.Cells, rec.Sentences = nil, nil
	brackets := m.RowBrackets()
	for i, row := range m.Cells {
		var line []StepLine
		for _, st := range row {
			line = append(line, stepLine(st))
		}
		rec.Cells = append(rec.Cells, line)
		s := fmt.Sprintf("%s = %s: ", rec.Param2, fy(m.Ys[i]))
		var parts []string
		for _, b := range brackets[i] {
			cmp := "≤"
			if b.Safe > b.Unsafe {
				cmp = "≥"
			}
			parts = append(parts, fmt.Sprintf("%s %s %s safe (%s unsafe)", rec.Param, cmp, fx(b.Safe), fx(b.Unsafe)))
		}
		if len(parts) == 0 {
			parts = append(parts, uniform(row)+" over "+fx(m.Xs[0])+".."+fx(m.Xs[len(m.Xs)-1]))
		}
		rec.Sentences = append(rec.Sentences, s+strings.Join(parts, "; "))
	}
}

// uniform says what a row without a change of verdict is.
func uniform(row []*Step) string {
	seen := map[Verdict]int{}
	for _, st := range row {
		seen[st.Verdict]++
	}
	switch {
	case seen[Safe] == len(row):
		return "safe at every value"
	case seen[Unsafe] == len(row):
		return "unsafe at every value"
	}
	return "no change of verdict between judged values"
}

func stepLine(st *Step) StepLine {
	l := StepLine{Value: st.Value, Verdict: st.Verdict, Pass: st.Pass, Fail: st.Fail, Noisy: st.Noisy}
	if st.HasMetric {
		lo, hi := st.MetricMin, st.MetricMax
		l.MetricMin, l.MetricMax = &lo, &hi
	}
	return l
}

// HeatMap writes a standalone HTML page with an SVG grid: one cell per pair of values,
// coloured by verdict (class "cell safe", "cell unsafe", "cell unjudged"), the metric's
// highest value over the seeds written in it.
func HeatMap(w io.Writer, rec *MapRecord, fx, fy func(float64) string) error {
	const cw, ch, left, top = 70.0, 34.0, 110.0, 40.0
	var b strings.Builder
	esc := html.EscapeString
	width, height := left+cw*float64(len(rec.Xs))+20, top+ch*float64(len(rec.Ys))+60
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kalab sweep: %s × %s</title>\n", esc(rec.Param), esc(rec.Param2))
	b.WriteString("<style>body{font:14px system-ui,sans-serif;margin:24px;color:#1f2328}svg text{font:12px system-ui,sans-serif}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>%s × %s</h1>\n<p>%s, run %s: verdict <code>%s</code> over seeds %v; each cell shows the highest %s.</p>\n",
		esc(rec.Param), esc(rec.Param2), esc(rec.File), esc(rec.Run), esc(rec.Check), rec.Seeds, esc(rec.Metric))
	fmt.Fprintf(&b, "<svg id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\">\n", width, height)
	fill := map[Verdict]string{Safe: safeColor, Unsafe: unsafeColor, Unjudged: "#8c959f"}
	for i, row := range rec.Cells {
		yv := rec.Ys[i]
		cy := top + ch*float64(len(rec.Ys)-1-i) // the first y at the bottom
		fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>\n", left-8, cy+ch/2+4, esc(fy(yv)))
		for _, c := range row {
			j := index(rec.Xs, c.Value)
			cx := left + cw*float64(j)
			label := "–"
			if c.MetricMax != nil {
				label = num(*c.MetricMax)
			}
			fmt.Fprintf(&b, "<rect class=\"cell %s\" x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\" stroke=\"#ffffff\"><title>%s=%s, %s=%s: %s</title></rect>\n",
				c.Verdict, cx, cy, cw, ch, fill[c.Verdict], esc(rec.Param), esc(fx(c.Value)), esc(rec.Param2), esc(fy(yv)), c.Verdict)
			fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" fill=\"#ffffff\">%s</text>\n", cx+cw/2, cy+ch/2+4, label)
		}
	}
	for j, xv := range rec.Xs {
		fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", left+cw*float64(j)+cw/2, top+ch*float64(len(rec.Ys))+18, esc(fx(xv)))
	}
	fmt.Fprintf(&b, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", left+cw*float64(len(rec.Xs))/2, top+ch*float64(len(rec.Ys))+42, esc(rec.Param))
	fmt.Fprintf(&b, "<text x=\"10\" y=\"%g\">%s</text>\n", top-14, esc(rec.Param2))
	b.WriteString("</svg>\n")
	for _, s := range rec.Sentences {
		fmt.Fprintf(&b, "<p class=\"sentence\">%s</p>\n", esc(s))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func index(xs []float64, v float64) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return 0
}
