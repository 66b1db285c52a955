package findings

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// data is what a template reads: the baseline's runs by "scenario/variant", and the run of
// every bundled file on the real clock beside it.
type data struct {
	RunID      string // the baseline's run id
	Started    string // when it started ("2026-12-05 at 00:57 UTC")
	Took       string // how long it took ("30 s", "5 min 5 s")
	Runs       int    // its run records
	Passed     int    // those that passed
	ClocksReal string // the real-clock run's id
	runs       map[string]*report.Run
	real       *report.Results
}

func load(root string) (*data, error) {
	base, err := report.ReadFile(filepath.Join(root, BaselineFile))
	if err != nil {
		return nil, err
	}
	real, err := report.ReadFile(filepath.Join(root, ClocksRealFile))
	if err != nil {
		return nil, err
	}
	if base.Invocation == nil || real.Invocation == nil {
		return nil, fmt.Errorf("%s and %s must each hold an invocation record (its run id)", BaselineFile, ClocksRealFile)
	}
	d := &data{RunID: base.Invocation.RunID, ClocksReal: real.Invocation.RunID, runs: map[string]*report.Run{}, real: real}
	inv := base.Invocation
	d.Started = inv.StartedAt.UTC().Format("2006-01-02 at 15:04 UTC")
	if inv.EndedAt != nil {
		d.Took = took(inv.EndedAt.Sub(inv.StartedAt))
	}
	for i := range base.Runs {
		r := &base.Runs[i]
		d.runs[r.Scenario+"/"+r.Variant] = r
		d.Runs++
		if r.Status == report.StatusPass {
			d.Passed++
		}
	}
	return d, nil
}

// took writes a duration as the pages do: "30 s", "5 min 5 s".
func took(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}

// funcs are the template's figures. A run is named "scenario/variant" (the scenario's
// name, not its file), a metric as checks name it ("latency_ms.p50", "errors_by_class.timeout").
func (d *data) funcs() template.FuncMap {
	return template.FuncMap{
		// count: a whole number with thousands separators ("4,971"); an error if it is not whole.
		"count": func(run, metric string) (string, error) {
			v, err := d.metric(run, metric)
			if err != nil {
				return "", err
			}
			if v != math.Trunc(v) {
				return "", fmt.Errorf("%s %s is %v, not a count", run, metric, v)
			}
			return Thousands(v), nil
		},
		// plain: a whole number without separators, as in "15/1000".
		"plain": func(run, metric string) (string, error) {
			v, err := d.metric(run, metric)
			return strconv.FormatFloat(math.Round(v)+0, 'f', 0, 64), err
		},
		// ms: milliseconds rounded to a whole number, with thousands separators ("1,100").
		"ms": func(run, metric string) (string, error) {
			v, err := d.metric(run, metric)
			return Thousands(v), err
		},
		// msd: milliseconds with the given decimals and thousands separators ("1,149.8").
		"msd": func(run, metric string, decimals int) (string, error) {
			v, err := d.metric(run, metric)
			return Grouped(v, decimals), err
		},
		// per: a metric over a figure, rounded to a whole number (a latency in round trips).
		"per": func(run, metric string, by float64) (string, error) {
			v, err := d.metric(run, metric)
			return Thousands(v / by), err
		},
		// sec: milliseconds as seconds with the given decimals ("0.29").
		"sec": func(run, metric string, decimals int) (string, error) {
			v, err := d.metric(run, metric)
			return strconv.FormatFloat(v/1000, 'f', decimals, 64), err
		},
		// ratio: one run's metric over another's, with the given decimals and an x ("3.0x").
		"ratio": func(run, over, metric string, decimals int) (string, error) {
			return d.ratio(run, over, metric, decimals)
		},
		// ratios: ratio over pairs of runs (run, over, run, over, ...), one figure when they
		// all write the same ("3.0x"), else the lowest and the highest ("2.9x-3.0x").
		"ratios": d.ratios,
		// same: a count several runs share ("0 with either fix"); an error when they differ.
		"same": d.same,
		// list: its arguments, to range over ("150" "380" "50").
		"list": func(s ...string) []string { return s },
		// predicted: the count the plan predicts for the run (engine/oracle).
		"predicted": d.predicted,
		// clockRows: the virtual runs of the baseline beside the same runs on the real clock.
		"clockRows": d.clockRows,
		// realChecks: the real-clock run's failed checks and reruns.
		"realChecks": d.realChecks,
	}
}

// metric is one metric of one run of the baseline.
func (d *data) metric(run, metric string) (float64, error) {
	r, ok := d.runs[run]
	if !ok {
		return 0, fmt.Errorf("%s has no run %q (scenario/variant)", BaselineFile, run)
	}
	v, ok := r.Metrics.Flat()[metric]
	if !ok {
		return 0, fmt.Errorf("no metric %q", metric)
	}
	return v, nil
}

func (d *data) ratio(run, over, metric string, decimals int) (string, error) {
	a, err := d.metric(run, metric)
	if err != nil {
		return "", err
	}
	b, err := d.metric(over, metric)
	if err != nil {
		return "", err
	}
	if b == 0 {
		return "", fmt.Errorf("%s %s is 0: no ratio over it", over, metric)
	}
	return strconv.FormatFloat(a/b, 'f', decimals, 64) + "x", nil
}

func (d *data) ratios(metric string, decimals int, pairs ...string) (string, error) {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return "", fmt.Errorf("ratios takes pairs of runs, not %d", len(pairs))
	}
	var lo, hi float64
	for i := 0; i < len(pairs); i += 2 {
		a, err := d.metric(pairs[i], metric)
		if err != nil {
			return "", err
		}
		b, err := d.metric(pairs[i+1], metric)
		if err != nil {
			return "", err
		}
		if b == 0 {
			return "", fmt.Errorf("%s %s is 0: no ratio over it", pairs[i+1], metric)
		}
		if r := a / b; i == 0 || r < lo {
			lo = r
		}
		if r := a / b; r > hi {
			hi = r
		}
	}
	l, h := strconv.FormatFloat(lo, 'f', decimals, 64), strconv.FormatFloat(hi, 'f', decimals, 64)
	if l == h {
		return l + "x", nil
	}
	return l + "x-" + h + "x", nil
}

func (d *data) same(metric string, runs ...string) (string, error) {
	var first float64
	for i, run := range runs {
		v, err := d.metric(run, metric)
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = v
		} else if v != first {
			return "", fmt.Errorf("%s %s is %v, %s's is %v: the page says they are the same", run, metric, v, runs[0], first)
		}
	}
	if len(runs) == 0 {
		return "", fmt.Errorf("same %s of no runs", metric)
	}
	return Thousands(first), nil
}

func (d *data) predicted(run, metric string) (int, error) {
	r, ok := d.runs[run]
	if !ok {
		return 0, fmt.Errorf("%s has no run %q (scenario/variant)", BaselineFile, run)
	}
	if r.Predicted != nil {
		for _, c := range r.Predicted.Counts {
			if c.Metric == metric && c.Predicted {
				return c.Value, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: the plan predicts no %s", run, metric)
}

// Thousands writes v rounded to a whole number, with a comma between each three digits.
func Thousands(v float64) string { return Grouped(v, 0) }

// Grouped writes v with the given decimals and a comma between each three digits of its
// whole part ("1,149.8").
func Grouped(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-") // no "-0"
	}
	sign, s := "", s
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}
