// Package truth is kalab truth: kalab run over the truth files the binary embeds
// (scenarios/truth/), against the programs installed here, then a verdict per preset that a
// truth file verifies and per version of its real program that ran: it holds, it does not
// (which check failed), or it has no verdict (which run had none, and why).
package truth

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// Exit codes, as kalab run's.
const (
	exitOK, exitFailed, exitNoVerdict = 0, 1, 3
)

// RunArgs are kalab run's arguments for kalab truth with flags: the bundled adapters and
// real servers allowed (--allow-exec=bundled, which a flag of the user's may override),
// then the truth files the binary embeds.
func RunArgs(flags []string) []string {
	return append(append([]string{"--allow-exec=bundled"}, flags...), "builtin:truth/")
}

// Verdict is what the truth files said of one preset: a verdict for each version of its
// real program that they ran, in version order.
type Verdict struct {
	Preset   string
	Versions []*Version
}

// Version is what the truth files said of a preset against one version of its real
// program: of its runs, how many agree with the preset, how many failed a check and how
// many have no verdict.
type Version struct {
	// Label is the program and version, "go 1.22.12", with ", not among the versions
	// verified (...)" when the preset's list lacks it.
	Label string
	Files []string // the truth files that ran it, as scenarios/truth/NAME.yaml
	Runs  int      // its runs
	Agree int      // its runs whose every check passed
	// FailedRuns and NoVerdictRuns are its runs that a check failed, and the other runs that
	// have no verdict: not run, an error, or a compare check that reads them not evaluated.
	FailedRuns, NoVerdictRuns int
	Failed                    []string // each failed check that reads one of its runs, with file and line
	NoVerdict                 []string // why a run of it has no verdict
	program, version          string
}

// Holds reports whether every run of the version agrees with the preset.
func (g *Version) Holds() bool { return g.Runs > 0 && g.Agree == g.Runs }

// Summary is the version's verdict in a phrase: "holds for go 1.26.8 (scenarios/truth/go.yaml)",
// else the verdict and the count of its runs that agree, failed and have none.
func (g *Version) Summary() string {
	what := fmt.Sprintf("%s (%s)", g.Label, strings.Join(g.Files, ", "))
	if g.Holds() {
		return "holds for " + what
	}
	verdict := "NO VERDICT"
	if g.FailedRuns > 0 {
		verdict = "DOES NOT HOLD"
	}
	agree := "agree"
	if g.Runs == 1 {
		agree = "agrees"
	}
	s := fmt.Sprintf("%s for %s: %d of %d run%s %s", verdict, what, g.Agree, g.Runs, plural(g.Runs), agree)
	if g.FailedRuns > 0 {
		s += fmt.Sprintf(", %d failed", g.FailedRuns)
	}
	if g.NoVerdictRuns > 0 {
		s += fmt.Sprintf(", %d no verdict", g.NoVerdictRuns)
	}
	return s
}

// Name is the program and version, "go 1.22.12", without the label's note.
func (g *Version) Name() string {
	if g.version == "" {
		return g.program + " (version unknown)"
	}
	return g.program + " " + g.version
}

// realRun is one run of a preset's real program: its version and what its checks said.
type realRun struct {
	version           *Version
	failed, noVerdict bool
	own               bool // the run itself has no verdict (not the checks that read it)
}

// variantRead finds the runs a check reads: variant('x'), or both of plan_reaches('x', 'y').
var variantRead = regexp.MustCompile(`variant\('([^']+)'\)|plan_reaches\('([^']+)',\s*'([^']+)'\)`)

// truthFile names a record's file as the bundled suite does: scenarios/truth/NAME.yaml.
func truthFile(file string) string {
	return "scenarios/truth/" + filepath.Base(file)
}

// Verdicts reads the records of a truth run: for every preset a truth file verifies, each
// version of its real program that ran beside it, and the checks that read those runs.
func Verdicts(res *report.Results) []*Verdict {
	by := map[string]*Verdict{}
	for _, reg := range []map[string]*scenario.Preset{scenario.ServerPresets, scenario.ClientPresets, scenario.BalancerPresets} {
		for name, p := range reg {
			if len(p.Checked) > 0 {
				by[name] = &Verdict{Preset: name}
			}
		}
	}
	// reals[scenario][variant] are the runs of a preset's real program a variant ran.
	reals := map[string]map[string][]*realRun{}
	var all []*realRun
	runs := map[string]*report.Run{}
	for i := range res.Runs {
		r := &res.Runs[i]
		runs[r.Scenario+"\x00"+r.Variant] = r
		for _, m := range modelled(r) {
			if v := by[m.Preset.Name]; v != nil {
				rr := v.run(r, m)
				if reals[r.Scenario] == nil {
					reals[r.Scenario] = map[string][]*realRun{}
				}
				reals[r.Scenario][r.Variant] = append(reals[r.Scenario][r.Variant], rr)
				all = append(all, rr)
			}
		}
	}
	for i := range res.Scenarios {
		s := &res.Scenarios[i]
		for _, c := range s.Checks {
			judge(c, truthFile(s.File), reals[s.Scenario], runs, s.Scenario)
		}
	}
	for _, rr := range all {
		switch g := rr.version; {
		case rr.failed:
			g.FailedRuns++
		case rr.noVerdict:
			g.NoVerdictRuns++
		default:
			g.Agree++
		}
	}
	out := make([]*Verdict, 0, len(by))
	for _, v := range by {
		sort.Slice(v.Versions, func(i, j int) bool { return versionLess(v.Versions[i], v.Versions[j]) })
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Preset < out[j].Preset })
	return out
}

// modelled are the run's real programs that a preset models (runner.ModelledPrograms). A
// run that never started its program (not run, interrupted) is known by the program its
// settings name, and its version by the one they ask for.
func modelled(r *report.Run) []runner.Modelled {
	var p struct {
		Client struct {
			Exec *struct{ Adapter, Version string } `json:"exec"`
		} `json:"client"`
		Server struct {
			Exec string `json:"exec"`
		} `json:"server"`
	}
	_ = json.Unmarshal(r.Params, &p) // a run without settings is known by its records alone
	rr := *r
	if rr.Client == nil && p.Client.Exec != nil {
		rr.Client = &report.ClientRuntime{Adapter: p.Client.Exec.Adapter}
	}
	if rr.Server == nil && p.Server.Exec != "" {
		rr.Server = &report.Server{Kind: p.Server.Exec}
	}
	ms := runner.ModelledPrograms(&rr)
	for i, m := range ms {
		if m.Version == "" && p.Client.Exec != nil && rr.Client != nil && m.Preset == scenario.ClientPresets[m.Preset.Name] {
			ms[i].Version = scenario.VersionOf(m.Program, p.Client.Exec.Version)
		}
	}
	return ms
}

// run adds a run of the preset's real program to the version it ran, and says why when the
// run itself has no verdict or failed its own expect checks.
func (v *Verdict) run(r *report.Run, m runner.Modelled) *realRun {
	g := v.version(m, truthFile(r.File))
	g.Runs++
	rr := &realRun{version: g}
	file := truthFile(r.File)
	switch r.Status {
	case report.StatusPass:
	case report.StatusFail:
		for _, e := range r.Checks {
			if e.Verdict() == report.VerdictFail {
				rr.failed = true
				add(&g.Failed, fmt.Sprintf("%s:%d: %s: %s (%s)", file, e.Line, r.Variant, e.Expr, report.Observed(e.Observed)))
			}
		}
	default:
		rr.noVerdict, rr.own = true, true
		add(&g.NoVerdict, fmt.Sprintf("%s / %s: %s: %s%s", file, r.Variant, r.Status, r.Reason, r.Error))
	}
	return rr
}

// version is the preset's entry for m's program and version, made on first use.
func (v *Verdict) version(m runner.Modelled, file string) *Version {
	for _, g := range v.Versions {
		if g.program == m.Program && g.version == m.Version {
			if !contains(g.Files, file) {
				g.Files = append(g.Files, file)
				sort.Strings(g.Files)
			}
			return g
		}
	}
	g := &Version{Files: []string{file}, program: m.Program, version: m.Version}
	g.Label = g.Name()
	if m.Version != "" {
		if as := m.Preset.VerifiedAs(m.Program, m.Version); as == "" {
			g.Label += ", not among the versions verified (" + m.Preset.VersionsOf(m.Program) + ")"
		} else if as != m.Version {
			g.Label += ", verified as " + as
		}
	}
	v.Versions = append(v.Versions, g)
	return g
}

// judge applies a compare check to the runs of real programs it reads: a failed check fails
// each of them, one not evaluated leaves each without a verdict (unless the run has none of
// its own, which says why), and a failed expect check of any run it reads (the model's)
// fails them too.
func judge(c report.Check, file string, reals map[string][]*realRun, runs map[string]*report.Run, sc string) {
	var read []*realRun
	var variants []string
	for _, m := range variantRead.FindAllStringSubmatch(c.Expr, -1) {
		for _, name := range m[1:] {
			if name != "" && !contains(variants, name) {
				variants = append(variants, name)
				read = append(read, reals[name]...)
			}
		}
	}
	for _, rr := range read {
		switch c.Verdict() {
		case report.VerdictFail:
			rr.failed = true
			add(&rr.version.Failed, fmt.Sprintf("%s:%d: %s (%s)", file, c.Line, c.Expr, report.Observed(c.Observed)))
		case report.VerdictNotEvaluated:
			if !rr.own {
				rr.noVerdict = true
				add(&rr.version.NoVerdict, fmt.Sprintf("%s:%d: %s: not evaluated: %s", file, c.Line, c.Expr, c.NotEvaluated))
			}
		}
		for _, name := range variants {
			r := runs[sc+"\x00"+name]
			if r == nil || reals[name] != nil {
				continue // a real run's own checks are its own (run)
			}
			for _, e := range r.Checks {
				if e.Kind == "expect" && e.Verdict() == report.VerdictFail {
					rr.failed = true
					add(&rr.version.Failed, fmt.Sprintf("%s:%d: %s: %s (%s)", file, e.Line, r.Variant, e.Expr, report.Observed(e.Observed)))
				}
			}
		}
	}
}

// versionLess orders versions by program, then version number by number (1.9 before 1.10).
func versionLess(a, b *Version) bool {
	if a.program != b.program {
		return a.program < b.program
	}
	x, y := strings.FieldsFunc(a.version, notDigit), strings.FieldsFunc(b.version, notDigit)
	for i := 0; i < len(x) && i < len(y); i++ {
		m, errm := strconv.Atoi(x[i])
		n, errn := strconv.Atoi(y[i])
		if errm == nil && errn == nil && m != n {
			return m < n
		}
	}
	if len(x) != len(y) {
		return len(x) < len(y)
	}
	return a.version < b.version
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

func add(list *[]string, s string) {
	if !contains(*list, s) {
		*list = append(*list, s)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Report reads the results kalab run wrote to dir (runCode its exit code), writes a verdict
// per preset and version to w and returns kalab truth's exit code: 1 when a preset does not
// hold for a version (each named on errw), else 3 when a run of a preset's real program has
// no verdict (not installed, an error, too noisy to judge), else runCode. A runCode other
// than 0, 1 and 3 (bad flags, the help) is returned as it is.
func Report(w, errw io.Writer, dir string, runCode int) int {
	if runCode != exitOK && runCode != exitFailed && runCode != exitNoVerdict {
		return runCode
	}
	res, err := report.ReadAny(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		fmt.Fprintf(errw, "kalab truth: %v\n", err)
		return exitNoVerdict
	}
	failed, missing := false, false
	fmt.Fprintln(w, "\npresets against the programs installed here:")
	for _, v := range Verdicts(res) {
		if len(v.Versions) == 0 { // a --filter left its truth files out
			fmt.Fprintf(w, "  %s: not in these results (no run of its real program)\n", v.Preset)
			continue
		}
		var says, notHeld []string
		for _, g := range v.Versions {
			says = append(says, g.Summary())
			if g.FailedRuns > 0 {
				notHeld = append(notHeld, g.Name())
			}
			missing = missing || g.NoVerdictRuns > 0
		}
		fmt.Fprintf(w, "  %s: %s\n", v.Preset, strings.Join(says, "; "))
		for _, g := range v.Versions {
			for _, f := range g.Failed {
				fmt.Fprintf(w, "    %s failed: %s\n", g.Name(), f)
			}
			for _, f := range g.NoVerdict {
				fmt.Fprintf(w, "    %s no verdict: %s\n", g.Name(), f)
			}
		}
		if len(notHeld) > 0 {
			failed = true
			n := 0
			for _, g := range v.Versions {
				n += len(g.Failed)
			}
			fmt.Fprintf(errw, "kalab truth: preset %s does not hold for %s (%d failed check%s)\n", v.Preset, strings.Join(notHeld, "; "), n, plural(n))
		}
	}
	switch {
	case failed:
		return exitFailed
	case runCode == exitFailed:
		fmt.Fprintln(errw, "kalab truth: a check of a truth file failed that reads no preset's real program (see above)")
	case missing:
		return exitNoVerdict
	}
	return runCode
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
