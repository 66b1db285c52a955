// Package promtext writes a results file's runs in the Prometheus text exposition format
// (version 0.0.4): what node_exporter's textfile collector reads from a directory, what a
// Pushgateway takes in a push, and what promtool check metrics validates.
//
// Every run's metric is one sample of a gauge family named kalab_<metric>, labelled with the
// run's scenario, variant, clock and the kalab version that ran it. Metrics in milliseconds
// are written in seconds and megabytes in bytes, the base units Prometheus names use; a
// metric with parts (latency_ms.p50, errors_by_class.reset) is one family with a label for
// the part. Check verdicts and the oracle's predictions are families of their own. Samples
// carry no timestamp: the textfile collector refuses them, and a scrape or push stamps them.
package promtext

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/check"
	"github.com/kalab-dev/kalab/engine/report"
)

// Prefix starts every family name.
const Prefix = "kalab_"

// family is one metric family: its name, help, and samples in the order they were added.
type family struct {
	name, help string
	samples    []sample
}

type sample struct {
	labels []label
	value  float64
}

type label struct{ name, value string }

// exposition gathers families by name, in the order first added.
type exposition struct {
	order []string
	fams  map[string]*family
}

func (e *exposition) add(name, help string, labels []label, v float64) {
	f, ok := e.fams[name]
	if !ok {
		f = &family{name: name, help: help}
		e.fams[name] = f
		e.order = append(e.order, name)
	}
	f.samples = append(f.samples, sample{labels: labels, value: v})
}

// WriteFile writes the exposition of runs and scenarios to path whole (a temporary file in
// the same directory, renamed over it), so that a collector reading the directory never
// sees half a file.
func WriteFile(path string, runs []*report.Run, scenarios []*report.Scenario) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return Write(w, runs, scenarios) }); err != nil {
		return fmt.Errorf("metrics file: %w", err)
	}
	return nil
}

// CheckPath checks, before anything runs, that path can take the file when it is written
// whole at the end: a regular file or a new path.
func CheckPath(path string) error { return atomicfile.Check(path) }

// Write writes the exposition of runs and scenarios to w. A run recorded more than once
// under the same scenario, variant and clock (a file merged from several invocations)
// gives the samples of its last record: a family holds one sample per label set.
func Write(w io.Writer, runs []*report.Run, scenarios []*report.Scenario) error {
	e := &exposition{fams: map[string]*family{}}
	for _, r := range latest(runs) {
		base := runLabels(r)
		addStatus(e, r, base)
		if r.Status == report.StatusNotRun || r.Status == report.StatusError {
			addChecks(e, r.Checks, base)
			continue
		}
		addMetrics(e, r.Metrics, base)
		addChecks(e, r.Checks, base)
		addPredicted(e, r.Predicted, base)
	}
	for _, sc := range latestScenarios(scenarios) {
		base := []label{{"scenario", sc.Scenario}, {"kalab_version", sc.KalabVersion}}
		addChecks(e, sc.Checks, base)
	}
	return e.write(w)
}

// latest keeps the last record of each scenario, variant and clock, sorted by those: the
// same results give the same file, whether from the run's outcome or its results.jsonl
// (written in the order runs ended).
func latest(runs []*report.Run) []*report.Run {
	at := map[string]int{}
	var out []*report.Run
	for _, r := range runs {
		k := r.Scenario + "\x00" + r.Variant + "\x00" + r.ClockName()
		if i, ok := at[k]; ok {
			out[i] = r
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Scenario != b.Scenario {
			return a.Scenario < b.Scenario
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		return a.ClockName() < b.ClockName()
	})
	return out
}

func latestScenarios(scs []*report.Scenario) []*report.Scenario {
	at := map[string]int{}
	var out []*report.Scenario
	for _, sc := range scs {
		if i, ok := at[sc.Scenario]; ok {
			out[i] = sc
			continue
		}
		at[sc.Scenario] = len(out)
		out = append(out, sc)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Scenario < out[j].Scenario })
	return out
}

func runLabels(r *report.Run) []label {
	return []label{{"scenario", r.Scenario}, {"variant", r.Variant}, {"clock", r.ClockName()}, {"kalab_version", r.KalabVersion}}
}

func with(base []label, more ...label) []label {
	out := make([]label, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}

// statuses are the values kalab_run_status's status label takes, one sample each.
var statuses = []string{report.StatusPass, report.StatusFail, report.StatusError, report.StatusInterrupted, report.StatusNotRun}

func addStatus(e *exposition, r *report.Run, base []label) {
	const help = "1 for the run's status (pass, fail, error, interrupted, not-run), 0 for the others"
	for _, st := range statuses {
		v := 0.0
		if r.Status == st {
			v = 1
		}
		e.add(Prefix+"run_status", help, with(base, label{"status", st}), v)
	}
	e.add(Prefix+"run_wall_seconds", "real time the run took, in seconds (not scaled)", base, r.WallMs/1000)
	if !r.StartedAt.IsZero() {
		e.add(Prefix+"run_started_seconds", "when the run started, in seconds since the Unix epoch", base, float64(r.StartedAt.UnixNano())/1e9)
	}
}

// partLabels names the labels of a metric's parts after its first dotted element.
var partLabels = map[string][]string{
	"errors_by_class":         {"class"},
	"backend_errors_by_class": {"class"},
	"latency_ms":              {"stat"},
	"queue_wait_ms":           {"stat"},
	"server_idle_close_ms":    {"stat"},
	"lag_ms":                  {"timer", "stat"},
}

// Family returns the family a metric of the vocabulary is written in, the labels of its
// part, and the factor from its unit to the family's: a name ending in _ms becomes one
// ending in _seconds (÷1000), cpu_us_per_request cpu_seconds_per_request (÷1e6) and
// peak_rss_mb peak_rss_bytes (×2^20, as the probe counts MB).
func Family(name string) (family string, labels []label, scale float64) {
	parts := strings.Split(name, ".")
	base, scale := parts[0], 1.0
	for i, ln := range partLabels[base] {
		if i+1 < len(parts) {
			labels = append(labels, label{ln, parts[i+1]})
		}
	}
	switch {
	case strings.HasSuffix(base, "_ms"):
		base, scale = strings.TrimSuffix(base, "_ms")+"_seconds", 1e-3
	case base == "cpu_us_per_request":
		base, scale = "cpu_seconds_per_request", 1e-6
	case base == "peak_rss_mb":
		base, scale = "peak_rss_bytes", 1<<20
	}
	return Prefix + base, labels, scale
}

// FamilyName is the family name a metric of the vocabulary is written in.
func FamilyName(metric string) string {
	f, _, _ := Family(metric)
	return f
}

func addMetrics(e *exposition, m check.Metrics, base []label) {
	flat := m.Flat()
	for _, name := range check.Names() {
		fam, parts, scale := Family(name)
		e.add(fam, metricHelp(name), with(base, parts...), flat[name]*scale)
	}
}

// metricHelp is the family's help: the vocabulary's description of its first metric, in
// the family's unit.
func metricHelp(name string) string {
	d, ok := check.Doc(name)
	if !ok {
		return "kalab metric " + name
	}
	base := strings.Split(name, ".")[0]
	fam, _, scale := Family(name)
	_ = scale
	unit := d.Unit
	switch {
	case base == "cpu_us_per_request":
		unit = "seconds of CPU"
	case strings.HasSuffix(fam, "_seconds"):
		unit = "seconds"
	case strings.HasSuffix(fam, "_bytes") && scale != 1:
		unit = "bytes"
	}
	meaning := d.Meaning
	if _, parted := partLabels[base]; parted {
		meaning = "the metric " + base + " (kalab help metrics), one sample per " + strings.Join(partLabels[base], " and ")
	}
	return fmt.Sprintf("%s. Unit: %s.", meaning, unit)
}

func addChecks(e *exposition, cs []report.Check, base []label) {
	const help = "a check's verdict: 1 passed, 0 failed; a check not evaluated has no sample"
	counts := map[string]int{}
	for _, c := range cs {
		v := c.Verdict()
		counts[v]++
		if v == report.VerdictNotEvaluated {
			continue
		}
		pass := 0.0
		if v == report.VerdictPass {
			pass = 1
		}
		at := fmt.Sprintf("%s:%d:%d", c.File, c.Line, c.Col)
		e.add(Prefix+"check_passed", help, with(base, label{"kind", c.Kind}, label{"check", c.Expr}, label{"at", at}), pass)
	}
	if len(cs) == 0 {
		return
	}
	for _, v := range []string{report.VerdictPass, report.VerdictFail, report.VerdictNotEvaluated} {
		e.add(Prefix+"checks", "checks by verdict (pass, fail, not-evaluated)", with(base, label{"verdict", v}), float64(counts[v]))
	}
}

func addPredicted(e *exposition, p *report.Predicted, base []label) {
	if p == nil {
		return
	}
	dis := 0.0
	if p.Disagreement {
		dis = 1
	}
	e.add(Prefix+"model_disagreement", "1 when a count the plan predicts (engine/oracle) was measured outside its bounds", base, dis)
	for _, c := range p.Counts {
		if !c.Predicted {
			continue
		}
		l := with(base, label{"metric", c.Metric})
		e.add(Prefix+"predicted", "the count the plan predicts (engine/oracle) with every timer on time; the measurement is kalab_<metric>", l, float64(c.Value))
		e.add(Prefix+"predicted_low", "the lowest count the prediction allows at the run's lateness", l, float64(c.Lo))
		e.add(Prefix+"predicted_high", "the highest count the prediction allows at the run's lateness", l, float64(c.Hi))
		agree := 0.0
		if c.Verdict == report.ModelAgree {
			agree = 1
		}
		e.add(Prefix+"predicted_agree", "1 when the measured count is within the prediction's bounds, else 0", l, agree)
	}
}

// write writes the families, each with its HELP and TYPE, in the order first added.
func (e *exposition) write(w io.Writer) error {
	var b strings.Builder
	for _, name := range e.order {
		f := e.fams[name]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, escapeHelp(f.help), f.name)
		for _, s := range f.samples {
			b.WriteString(f.name)
			writeLabels(&b, s.labels)
			b.WriteByte(' ')
			b.WriteString(value(s.value))
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLabels(b *strings.Builder, ls []label) {
	sorted := make([]label, 0, len(ls))
	for _, l := range ls {
		if l.value != "" { // an empty value is the label's absence
			sorted = append(sorted, l)
		}
	}
	if len(sorted) == 0 {
		return
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	b.WriteByte('{')
	for i, l := range sorted {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "%s=\"%s\"", l.name, escapeLabel(l.value))
	}
	b.WriteByte('}')
}

// value writes a sample value: the shortest decimal that reads back as the same float
// (without an exponent where it is not needed), and NaN and the infinities as the format spells them.
func value(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	if a := math.Abs(v); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(v, 'f', -1, 64) // 2097152, not 2.097152e+06
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
