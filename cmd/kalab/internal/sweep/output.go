package sweep

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kalab-dev/kalab/engine/atomicfile"
)

// Record is the closing line of sweep.jsonl: what was asked and what was found.
type Record struct {
	Record       string      `json:"record"` // "sweep"
	KalabVersion string      `json:"kalab_version"`
	StartedAt    time.Time   `json:"started_at"`
	File         string      `json:"file"`
	Scenario     string      `json:"scenario"`
	Run          string      `json:"run"`
	Param        string      `json:"param"`
	Unit         string      `json:"unit"` // "s" for durations, "" for plain numbers
	Lo           float64     `json:"lo"`
	Hi           float64     `json:"hi"`
	Resolution   float64     `json:"resolution"`
	Seeds        []int64     `json:"seeds"`
	Budget       int         `json:"budget"`
	Runs         int         `json:"runs"`
	OutOfBudget  bool        `json:"out_of_budget"`
	Check        string      `json:"check"`  // what decides a run's verdict
	Metric       string      `json:"metric"` // what the table and the plot show
	Requests     int         `json:"requests"`
	Steps        []StepLine  `json:"steps"`
	Brackets     []Bracket   `json:"brackets"`
	Prediction   *Prediction `json:"prediction,omitempty"`
	Sentences    []string    `json:"sentences"`
	Context      string      `json:"context,omitempty"`
	// Interrupted: the sweep was stopped (SIGINT, SIGTERM) before it settled; the record
	// holds what ran and claims nothing of the range.
	Interrupted bool `json:"interrupted,omitempty"`
}

// StepLine is one value in the record.
type StepLine struct {
	Value     float64  `json:"value"`
	Verdict   Verdict  `json:"verdict"`
	Pass      int      `json:"pass"`
	Fail      int      `json:"fail"`
	Noisy     int      `json:"noisy"`
	MetricMin *float64 `json:"metric_min,omitempty"`
	MetricMax *float64 `json:"metric_max,omitempty"`
}

// SampleLine is one run of the sweep, written to sweep.jsonl as it ends.
type SampleLine struct {
	Record  string   `json:"record"` // "sample"
	Value   float64  `json:"value"`
	Value2  *float64 `json:"value2,omitempty"` // the second parameter's value in a map
	Seed    int64    `json:"seed"`
	Attempt int      `json:"attempt"`
	Pass    bool     `json:"pass"`
	Noisy   bool     `json:"noisy"`
	Metric  *float64 `json:"metric,omitempty"`
	Dir     string   `json:"dir"` // the run's results directory
}

// NewSampleLine is the record of one run.
func NewSampleLine(s Sample) SampleLine {
	l := SampleLine{Record: "sample", Value: s.Value, Seed: s.Seed, Attempt: s.Attempt, Pass: s.Pass && !s.Noisy, Noisy: s.Noisy, Dir: s.Ref}
	if s.HasMetric {
		m := s.Metric
		l.Metric = &m
	}
	return l
}

// Fill completes the record from a result: steps, brackets and the sentences.
func (rec *Record) Fill(res *Result, format func(float64) string) {
	rec.Runs, rec.OutOfBudget, rec.Brackets = res.Runs, res.OutOfRun, res.Brackets
	rec.Steps = rec.Steps[:0]
	for _, st := range res.Steps {
		rec.Steps = append(rec.Steps, stepLine(st))
	}
	rec.Sentences = Sentences(rec, res, format)
}

// Sentences says each boundary in one sentence with its evidence, or why there is none.
func Sentences(rec *Record, res *Result, format func(float64) string) []string {
	n := len(rec.Seeds)
	ctx := ""
	if rec.Context != "" {
		ctx = "; " + rec.Context
	}
	if len(res.Brackets) == 0 {
		return noBoundary(rec, res, format, ctx)
	}
	var out []string
	for _, b := range res.Brackets {
		safe, unsafe := res.Step(b.Safe), res.Step(b.Unsafe)
		cmp, from := "≤", "from"
		if b.Safe > b.Unsafe {
			cmp, from = "≥", "at or below"
		}
		s := fmt.Sprintf("%s %s %s: %s at every seed (%d × %d requests, %s)", rec.Param, cmp, format(b.Safe), rec.Check, n, rec.Requests, metricSpan(rec.Metric, safe))
		s += fmt.Sprintf("; %s %s: fails in %d of %d seeds (%s)", from, format(b.Unsafe), unsafe.Fail, unsafe.Pass+unsafe.Fail, metricSpan(rec.Metric, unsafe))
		switch {
		case b.Converged:
			s += fmt.Sprintf("; bracket %s wide (resolution %s)", format(b.Width()), format(rec.Resolution))
		case b.Stuck != "":
			s += fmt.Sprintf("; bracket %s wide, not narrowed further: %s", format(b.Width()), b.Stuck)
		default:
			s += fmt.Sprintf("; bracket %s wide, not narrowed to %s: the budget of %d runs is spent", format(b.Width()), format(rec.Resolution), rec.Budget)
		}
		out = append(out, s+ctx)
	}
	out = append(out, unsafeBands(rec, res, format)...)
	if geo := geometrySentence(rec, res, format); geo != "" {
		out = append(out, geo)
	}
	if gap := gapSentence(rec, res, format); gap != "" {
		out = append(out, gap)
	}
	return out
}

func metricSpan(metric string, st *Step) string {
	if st == nil || !st.HasMetric {
		return metric + " not read"
	}
	if st.MetricMin == st.MetricMax {
		return fmt.Sprintf("%s %s", metric, num(st.MetricMin))
	}
	return fmt.Sprintf("%s %s–%s", metric, num(st.MetricMin), num(st.MetricMax))
}

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// Table writes every point: value, verdict, seeds passing and failing, noisy runs, and the
// metric's span over the seeds with a verdict.
func Table(w io.Writer, rec *Record, res *Result, format func(float64) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tverdict\tpass\tfail\tnoisy\t%s (min–max)\n", rec.Param, rec.Metric)
	for _, st := range res.Steps {
		span := "-"
		if st.HasMetric {
			span = num(st.MetricMin) + "–" + num(st.MetricMax)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", format(st.Value), st.Verdict, st.Pass, st.Fail, st.Noisy, span)
	}
	return tw.Flush()
}

// LoadRecord reads the closing sweep record of a sweep.jsonl (or of the sweep.jsonl in a
// directory), for --baseline.
func LoadRecord(path string) (*Record, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = strings.TrimSuffix(path, "/") + "/sweep.jsonl"
	}
	f, err := atomicfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	var last *Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var head struct{ Record string }
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if head.Record != "sweep" {
			continue
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		last = &r
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case last == nil:
		return nil, errors.New(path + ": no sweep record (the sweep stopped on an error before its end)")
	case last.Interrupted:
		return nil, errors.New(path + ": the sweep was interrupted before it settled, so it has no safe value to compare with; use a sweep that ran to its end")
	}
	return last, nil
}

// noBoundary is the sentence of a search that found no change of verdict. It speaks for the
// whole range only when every point of the coarse grid has a verdict and nothing stopped
// the search; otherwise it says what the judged points show and what is missing.
func noBoundary(rec *Record, res *Result, format func(float64) string, ctx string) []string {
	verdicts := map[Verdict]int{}
	for _, st := range res.Steps {
		verdicts[st.Verdict]++
	}
	spacing := format((rec.Hi - rec.Lo) / float64(max(len(res.Grid)-1, 1)))
	judged := verdicts[Safe] + verdicts[Unsafe]
	switch {
	case !res.Settled():
		return []string{fmt.Sprintf("%s: no boundary found among the %d point%s judged, and nothing is said of the whole range %s..%s: %s",
			rec.Param, judged, plural(judged), format(rec.Lo), format(rec.Hi), gapReason(rec, res, format))}
	case verdicts[Safe] > 0 && verdicts[Unsafe] == 0 && len(rec.Prediction.Bands(rec.Lo, rec.Hi, rec.Resolution)) > 0:
		return []string{bandSentence(rec, res, format, ctx)}
	case verdicts[Safe] > 0 && verdicts[Unsafe] == 0:
		return []string{fmt.Sprintf("%s is safe over the whole range %s..%s (%s at every seed of %d points, the grid %s apart: a narrower unsafe band could lie between them)%s",
			rec.Param, format(rec.Lo), format(rec.Hi), rec.Check, verdicts[Safe], spacing, ctx)}
	case verdicts[Unsafe] > 0 && verdicts[Safe] == 0:
		return []string{fmt.Sprintf("%s is unsafe over the whole range %s..%s (%s fails at %d points, the grid %s apart)%s",
			rec.Param, format(rec.Lo), format(rec.Hi), rec.Check, verdicts[Unsafe], spacing, ctx)}
	}
	return []string{fmt.Sprintf("%s: no boundary found (%d points, %d without a verdict)", rec.Param, len(res.Steps), verdicts[Unjudged])}
}

// gapSentence says, beside the boundaries found, which grid points have no verdict: another
// boundary may lie near them. "" when the search is settled.
func gapSentence(rec *Record, res *Result, format func(float64) string) string {
	if res.Settled() {
		return ""
	}
	return "not settled: " + gapReason(rec, res, format) + "; another boundary may lie there"
}

// gapReason names the grid points without a verdict and what left them so.
func gapReason(rec *Record, res *Result, format func(float64) string) string {
	var vals []string
	for _, v := range res.Gaps {
		vals = append(vals, format(v))
	}
	why := "their runs were noisy"
	switch {
	case res.Interrupted:
		why = "the sweep was interrupted"
	case res.OutOfRun:
		why = fmt.Sprintf("the budget of %d run%s was spent (--budget)", rec.Budget, plural(rec.Budget))
	}
	if len(vals) == 0 {
		return why
	}
	return fmt.Sprintf("%d of the %d grid points have no verdict (%s): %s", len(vals), len(res.Grid), strings.Join(vals, ", "), why)
}
