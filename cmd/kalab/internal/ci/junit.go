package ci

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/numtext"
	"github.com/kalab-dev/kalab/engine/report"
)

// The JUnit XML elements kalab writes: the subset of the Ant/Jenkins format
// (testdata/junit-10.xsd) that GitHub, GitLab and Jenkins test reports read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	File       string          `xml:"file,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      string        `xml:"line,attr,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// junitText is element text written as CDATA, so multi-line text stays readable.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// JUnitInput is what a JUnit report covers.
type JUnitInput struct {
	Runs      []*report.Run
	Scenarios []*report.Scenario
	// Missing are baseline runs that did not run; they are failures when FailMissing is
	// set, else skipped test cases.
	Missing     []gate.RunDiff
	FailMissing bool
}

// JUnit writes a JUnit XML report: one testsuite per scenario file, one testcase per
// variant (plus one named "compare" for a scenario's compare checks), failures carrying
// each failed check with its observed values.
func JUnit(w io.Writer, in JUnitInput) error {
	b := junitBuilder{suites: map[string]*junitAcc{}}
	// A run not run here that the baseline has is both a run and a missing one: one case.
	notRunMissing := map[string]bool{}
	for _, m := range in.Missing {
		notRunMissing[runKey(m.Scenario, m.Variant)] = true
	}
	ran := map[string]bool{}
	for _, r := range in.Runs {
		ran[runKey(r.Scenario, r.Variant)] = true
		b.addRun(r, runCase(r, in.FailMissing && notRunMissing[runKey(r.Scenario, r.Variant)]))
	}
	for _, sc := range in.Scenarios {
		if len(sc.Checks) > 0 {
			b.add(sc.Scenario, sc.File, compareCase(sc, versionNotes(in.Runs, sc.Scenario)))
		}
	}
	for _, m := range in.Missing {
		if !ran[runKey(m.Scenario, m.Variant)] {
			b.add(m.Scenario, m.File, missingCase(m, in.FailMissing))
		}
	}
	return writeJUnit(w, b.root())
}

// junitAcc is one scenario's testsuite as the report gathers it.
type junitAcc struct {
	suite junitSuite
	start time.Time
	wall  float64
}

// junitBuilder gathers test cases into suites, one per scenario, in first-seen order.
type junitBuilder struct {
	order  []string
	suites map[string]*junitAcc
}

// add appends c to the scenario's suite, making the suite when it is new.
func (b *junitBuilder) add(name, file string, c junitCase) *junitAcc {
	s, ok := b.suites[name]
	if !ok {
		s = &junitAcc{suite: junitSuite{Name: name, File: file}}
		b.suites[name] = s
		b.order = append(b.order, name)
	}
	s.suite.Cases = append(s.suite.Cases, c)
	return s
}

// addRun adds a run's case and its start, wall time and properties to its suite.
func (b *junitBuilder) addRun(r *report.Run, c junitCase) {
	s := b.add(r.Scenario, r.File, c)
	if s.start.IsZero() || r.StartedAt.Before(s.start) {
		s.start = r.StartedAt
	}
	s.wall += r.WallMs
	if len(s.suite.Properties) == 0 {
		s.suite.Properties = []junitProperty{
			{Name: "run_id", Value: r.RunID},
			{Name: "kalab_version", Value: r.KalabVersion},
			{Name: "time_scale", Value: numtext.Format(r.TimeScale)},
		}
	}
	s.suite.Properties = append(s.suite.Properties, junitProperty{Name: "clock." + r.Variant, Value: r.ClockName()})
}

// root counts every suite's cases and the totals.
func (b *junitBuilder) root() junitSuites {
	root := junitSuites{Name: "kalab"}
	var total float64
	for _, name := range b.order {
		acc := b.suites[name]
		s := acc.suite
		for _, c := range s.Cases {
			s.Tests++
			switch {
			case c.Failure != nil:
				s.Failures++
			case c.Error != nil:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
		}
		s.Time = seconds(acc.wall)
		if !acc.start.IsZero() {
			s.Timestamp = acc.start.UTC().Format("2006-01-02T15:04:05")
		}
		total += acc.wall
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Suites = append(root.Suites, s)
	}
	root.Time = seconds(total)
	return root
}

// runCase is a run's test case; missingFails says the run did not run, the baseline has
// it and missing runs fail.
func runCase(r *report.Run, missingFails bool) junitCase {
	c := junitCase{Name: r.Variant, Classname: r.Scenario, Time: seconds(r.WallMs), File: r.File, SystemOut: &junitText{Text: xmlSafe(runNotes(r) + runMetrics(r))}}
	var failed []report.Check
	for _, ch := range r.Checks {
		if ch.Failed() {
			failed = append(failed, ch)
		}
	}
	switch {
	case r.Status == report.StatusError || r.Status == report.StatusInterrupted:
		c.Error = &junitProblem{Message: xmlSafe(r.Status + ": " + r.Error), Type: r.Status, Text: xmlSafe(r.Error)}
	case r.Status == report.StatusNotRun && missingFails:
		msg := xmlSafe("in the baseline but not run here: " + r.Reason)
		c.Failure = &junitProblem{Message: msg, Type: "missing", Text: msg}
	case r.Status == report.StatusNotRun:
		c.Skipped = &junitProblem{Message: xmlSafe("not run: " + r.Reason)}
	case len(failed) > 0:
		c.Line = strconv.Itoa(failed[0].Line)
		c.Failure = failure(failed)
		c.Failure.Text += noteLines(r.VersionNotes())
	}
	return c
}

// runNotes lists a run's notes, one "note: ..." a line, for the test case's output.
func runNotes(r *report.Run) string {
	var b strings.Builder
	for _, n := range r.Notes {
		b.WriteString("note: " + n + "\n")
	}
	return b.String()
}

// versionNotes are the version notes of a scenario's runs, each led by its variant: a
// compare check between a preset and a real program at a version the preset was not
// verified against says what that version does.
func versionNotes(runs []*report.Run, scenario string) []string {
	var out []string
	for _, r := range runs {
		if r.Scenario != scenario {
			continue
		}
		for _, n := range r.VersionNotes() {
			out = append(out, r.Variant+": "+n)
		}
	}
	return out
}

// noteLines is notes as lines after a failure's text, each "note: ...".
func noteLines(notes []string) string {
	s := ""
	for _, n := range notes {
		s += "\nnote: " + xmlSafe(n)
	}
	return s
}

// compareCase is the "compare" test case of a scenario's compare checks; notes are the
// version notes of its runs, shown in its output and beside a failure.
func compareCase(sc *report.Scenario, notes []string) junitCase {
	c := junitCase{Name: "compare", Classname: sc.Scenario, Time: "0", File: sc.File}
	if len(notes) > 0 {
		c.SystemOut = &junitText{Text: xmlSafe(strings.TrimPrefix(noteLines(notes), "\n") + "\n")}
	}
	var failed, unevaluated []report.Check
	for _, ch := range sc.Checks {
		switch ch.Verdict() {
		case report.VerdictNotEvaluated:
			unevaluated = append(unevaluated, ch)
		case report.VerdictFail:
			failed = append(failed, ch)
		}
	}
	switch {
	case len(failed) > 0:
		c.Line = strconv.Itoa(failed[0].Line)
		c.Failure = failure(failed)
		c.Failure.Text += noteLines(notes)
	case len(unevaluated) > 0:
		// A case is one verdict: with any check not evaluated the case is not a pass.
		c.Skipped = &junitProblem{Message: xmlSafe(notEvaluatedText(unevaluated, len(sc.Checks)))}
	}
	return c
}

// missingCase is the case of a baseline run that did not run here at all.
func missingCase(m gate.RunDiff, failMissing bool) junitCase {
	c := junitCase{Name: m.Variant, Classname: m.Scenario, Time: "0", File: m.File}
	msg := "in the baseline (run " + m.BaselineRunID + ") but did not run"
	if failMissing {
		c.Failure = &junitProblem{Message: msg, Type: "missing", Text: msg}
	} else {
		c.Skipped = &junitProblem{Message: msg}
	}
	return c
}

// writeJUnit encodes the report with its XML header.
func writeJUnit(w io.Writer, root junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

// failure puts every failed check of a test case into one <failure>: most readers show
// only the first failure element of a case.
func failure(failed []report.Check) *junitProblem {
	lines := make([]string, len(failed))
	for i, c := range failed {
		lines[i] = fmt.Sprintf("%s:%d:%d: [%s] %s", c.File, c.Line, c.Col, c.Kind, checkText(c))
	}
	msg := checkText(failed[0])
	if len(failed) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(failed)-1)
	}
	return &junitProblem{Message: xmlSafe(msg), Type: failed[0].Kind, Text: xmlSafe(strings.Join(lines, "\n"))}
}

// runMetrics lists a run's metrics, one name=value a line, for the test case's output.
func runMetrics(r *report.Run) string {
	flat := r.Metrics.Flat()
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, numtext.Format(flat[k]))
	}
	return b.String()
}

// xmlSafe replaces the characters XML 1.0 cannot hold (most control characters), which an
// error message from the network could carry; CDATA sections are written unescaped.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}

func seconds(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 3, 64) }

// notEvaluatedText says how many of a case's checks were not evaluated, and why.
func notEvaluatedText(cs []report.Check, of int) string {
	s := fmt.Sprintf("%d of %d checks not evaluated", len(cs), of)
	for _, c := range cs {
		s += fmt.Sprintf("; %s: %s", c.Expr, c.NotEvaluated)
	}
	return s
}

func runKey(s, v string) string { return s + "\x00" + v }

// WriteJUnitFile writes the report through a temporary file beside path, renamed into place
// only over a regular file, so a reader never sees half of it and a device is never
// replaced.
func WriteJUnitFile(path string, in JUnitInput) error {
	if err := atomicfile.Write(path, func(w io.Writer) error { return JUnit(w, in) }); err != nil {
		return fmt.Errorf("JUnit report: %w", err)
	}
	return nil
}

// CheckPath checks, before anything runs, that path can take the report when it is written
// whole at the end: a regular file or a new path.
func CheckPath(path string) error { return atomicfile.Check(path) }
