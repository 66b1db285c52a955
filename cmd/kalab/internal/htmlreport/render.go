package htmlreport

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport/timeline"
	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

//go:embed page.html.tmpl
var pageSrc string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"ms": ms,
	"dur": func(v float64) string {
		if v >= 10000 {
			return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
		}
		return ms(v)
	},
	"num":      func(v float64) string { return fmtNum(v) },
	"pct":      func(v float64) string { return fmtf(v*100) + "%" },
	"observed": observed,
	"checks":   checksCount,
}).Parse(pageSrc))

// observed lists a check's observed values by name.
func observed(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + fmtNum(m[k])
	}
	return strings.Join(parts, ", ")
}

// checksCount is a run's or a scenario's checks column: passed out of evaluated, and the
// ones not evaluated apart ("0/0, 2 not evaluated"), never counted as passed.
func checksCount(cs []report.Check) string {
	var passed, evaluated, unevaluated int
	for _, c := range cs {
		switch c.Verdict() {
		case report.VerdictPass:
			passed++
			evaluated++
		case report.VerdictFail:
			evaluated++
		default:
			unevaluated++
		}
	}
	s := fmt.Sprintf("%d/%d", passed, evaluated)
	if unevaluated > 0 {
		s += fmt.Sprintf(", %d not evaluated", unevaluated)
	}
	return s
}

// Options adjust what the page says.
type Options struct {
	// Descriptions maps a scenario name to its description (from the scenario file, when
	// the caller could load it); the results do not carry it.
	Descriptions map[string]string
	// Version is the kalab version that renders the page.
	Version string
	// Order lists the runs in the order of the plan (scenario files, scenarios in a file,
	// variants), when the caller could load the scenario files: sections follow it. Runs it
	// does not name come after, by file name, in the order the results hold them.
	Order []RunKey
	// Baseline, when set (kalab report --baseline), is compared with every run under
	// Tolerances (nil: the default rules): its run is shown beside each run, and the
	// metrics that regressed are marked and listed at the top.
	Baseline   *baseline.Baseline
	Tolerances *baseline.Tolerances
}

// RunKey names a run of a plan.
type RunKey struct{ Scenario, Variant string }

type pageData struct {
	Dir, RunID, Version string
	Scenarios           []*scenarioView
	Runs, Requests      int
	Skipped             string
	Incomplete          string // why the results do not hold the whole invocation
	BaselineFile        string // the baseline compared with (Options.Baseline)
	Totals              totals
	Failures            []failure
}

type scenarioView struct {
	Name, File, Description, Status, ID string
	Runs                                []*runView
	Compare                             []report.Check
}

type runView struct {
	*RunData
	ID, Title    string
	Open         bool
	Timeline     timeline.Timeline
	Hist, Phases template.HTML
	PhaseRows    []phaseRow
	Params       string
	Expect       []report.Check
	BaselineChk  []report.Check
	Closes       string
	Diff         *gate.RunDiff // against Options.Baseline; nil without one
	DiffRows     []gate.MetricDelta
	Same         int // metrics within tolerance or informational, not listed
	Unused       int // connections the client opened that carried no request: no lane
	// H3 is set for an HTTP/3 run, and H3Counts is its QUIC counts for the run's header:
	// path migrations, PINGs, datagrams the NAT dropped, and others that are not zero.
	H3       bool
	H3Counts string
	// Explain holds kalab explain's paragraph per failed, retried, re-sent or 5xx request,
	// as JSON keyed by request number, for the facts panel; "" when there is none.
	Explain string
}

// Render writes the page for res.
func Render(w io.Writer, res *Results, opt Options) error {
	d := pageData{Dir: res.Dir, Version: opt.Version, Runs: len(res.Runs), Incomplete: res.Incomplete()}
	if opt.Baseline != nil {
		d.BaselineFile = opt.Baseline.Path
	}
	byName := map[string]*scenarioView{}
	for _, rd := range planOrder(res.Runs, opt.Order) {
		d.RunID = rd.RunID
		d.Requests += rd.Count()
		sv := byName[rd.Scenario]
		if sv == nil {
			sv = &scenarioView{Name: rd.Scenario, File: rd.File, Description: opt.Descriptions[rd.Scenario],
				Status: report.StatusPass, ID: "s-" + report.SafeName(rd.Scenario)}
			byName[rd.Scenario] = sv
			d.Scenarios = append(d.Scenarios, sv)
		}
		rv := buildRun(rd)
		compareRun(rv, opt)
		rv.Open = len(sv.Runs) == 0 || rd.Metrics.Errors > 0
		sv.Runs = append(sv.Runs, rv)
		if rd.Status != report.StatusPass && sv.Status == report.StatusPass {
			sv.Status = rd.Status
		}
	}
	for _, s := range res.Scenarios {
		if sv := byName[s.Scenario]; sv != nil {
			sv.Compare = s.Checks
			if s.Status != report.StatusPass && sv.Status == report.StatusPass {
				sv.Status = s.Status
			}
		}
	}
	var skipped []string
	for k, n := range res.Skipped {
		skipped = append(skipped, fmt.Sprintf("%d %q", n, k))
	}
	slices.Sort(skipped)
	d.Skipped = strings.Join(skipped, ", ")
	d.Totals, d.Failures = summarize(d.Scenarios)
	return page.Execute(w, d)
}

// planOrder returns the runs in the plan's order: results.jsonl holds them in the order
// they completed, which parallel runs shuffle. Runs the order does not name follow, by
// scenario file, then as the results hold them.
func planOrder(runs []*RunData, order []RunKey) []*RunData {
	scen, vari := map[string]int{}, map[RunKey]int{}
	for i, k := range order {
		if _, ok := scen[k.Scenario]; !ok {
			scen[k.Scenario] = i
		}
		vari[k] = i
	}
	first := map[string]int{} // scenario -> index of its first run in the results
	for i, rd := range runs {
		if _, ok := first[rd.Scenario]; !ok {
			first[rd.Scenario] = i
		}
	}
	rank := func(m map[string]int, k string) int {
		if i, ok := m[k]; ok {
			return i
		}
		return len(order)
	}
	rankV := func(m map[RunKey]int, rd *RunData) int {
		if i, ok := m[RunKey{rd.Scenario, rd.Variant}]; ok {
			return i
		}
		return len(order)
	}
	out := slices.Clone(runs)
	slices.SortStableFunc(out, func(a, b *RunData) int {
		if a.Scenario != b.Scenario {
			return cmp.Or(cmp.Compare(rank(scen, a.Scenario), rank(scen, b.Scenario)),
				cmp.Compare(a.File, b.File), cmp.Compare(first[a.Scenario], first[b.Scenario]))
		}
		return cmp.Compare(rankV(vari, a), rankV(vari, b))
	})
	return out
}

func buildRun(rd *RunData) *runView {
	pl := timeline.ReadPlan(rd.Params)
	rv := &runView{RunData: rd, ID: "run-" + report.SafeName(rd.Scenario) + "--" + report.SafeName(rd.Variant),
		Title: rd.Scenario + " / " + rd.Variant}
	rv.Timeline = buildTimeline(rd, pl)
	rv.H3, rv.H3Counts = pl.HTTP3, h3Counts(rd.Metrics, pl.HTTP3)
	rv.Unused = max(int(rd.Metrics.Connections)-rv.Timeline.Lanes, 0)
	if rd.Digest != nil {
		rv.Hist = rd.Digest.Hist.draw()
		rv.PhaseRows = rd.Digest.Phases.rows()
	} else {
		rv.Hist = histogram(rd.Requests)
		rv.PhaseRows = phaseSplit(rd.Requests)
	}
	rv.Phases = phaseChart(rv.PhaseRows)
	rv.Explain = explanations(rd)
	var pretty bytes.Buffer
	if json.Indent(&pretty, rd.Params, "", "  ") == nil {
		rv.Params = pretty.String()
	} else {
		rv.Params = string(rd.Params)
	}
	for _, c := range rd.Checks {
		if c.Kind == "baseline" {
			rv.BaselineChk = append(rv.BaselineChk, c)
		} else {
			rv.Expect = append(rv.Expect, c)
		}
	}
	var closes []string
	for _, by := range []string{report.ClosedByServer, report.ClosedByClient} {
		reasons := rd.Closes[by]
		keys := make([]string, 0, len(reasons))
		for k := range reasons {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			closes = append(closes, fmt.Sprintf("%d by the %s (%s)", reasons[k], by, k))
		}
	}
	rv.Closes = strings.Join(closes, ", ")
	return rv
}

// buildTimeline draws a run's lanes from its requests, or from its digest when it has one.
func buildTimeline(rd *RunData, pl timeline.Plan) timeline.Timeline {
	if rd.Digest != nil {
		return timeline.Build(nil, rd.Conns, rd.Digest.Digest, pl)
	}
	return timeline.Build(rd.Requests, rd.Conns, nil, pl)
}

// WriteFile renders res into path through engine/atomicfile: a reader sees the old file or
// the whole new one, and a target that is not a regular file (directory, symlink, device,
// FIFO) is refused with an *atomicfile.RefusedError.
func WriteFile(path string, res *Results, opt Options) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if err := Render(w, res, opt); err != nil {
			return fmt.Errorf("render %s: %w", path, err)
		}
		return nil
	})
}

func fmtNum(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	if v >= 100 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// compareRun compares a run with Options.Baseline: the baseline's run goes beside it, and
// the metrics that moved beyond their tolerance are listed, regressions first.
func compareRun(rv *runView, opt Options) {
	if opt.Baseline == nil {
		return
	}
	c := &baseline.Comparer{Baseline: opt.Baseline, Tolerances: opt.Tolerances}
	d := c.CompareRun(&rv.Run)
	rv.Diff = &d
	if br := opt.Baseline.Run(rv.Scenario, rv.Variant); br != nil {
		rv.BaselineRun = br
	}
	for _, m := range d.Metrics {
		switch m.Verdict {
		case gate.VerdictRegressed, gate.VerdictMachine, gate.VerdictImproved:
			rv.DiffRows = append(rv.DiffRows, m)
		default: // same, off, or an informational metric that moved
			rv.Same++
		}
	}
	slices.SortStableFunc(rv.DiffRows, func(a, b gate.MetricDelta) int {
		return cmp.Compare(verdictRank(a.Verdict), verdictRank(b.Verdict))
	})
}

func verdictRank(v string) int {
	switch v {
	case gate.VerdictRegressed:
		return 0
	case gate.VerdictMachine:
		return 1
	}
	return 2
}
