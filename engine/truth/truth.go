// Package truth is kalab truth: kalab run over the truth files the binary embeds
// (scenarios/truth/), against the programs installed here, then a verdict per preset that a
// truth file verifies: it holds for the program and version that ran, or which check failed.
package truth

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
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

// Verdict is what the truth files said of one preset.
type Verdict struct {
	Preset string
	Holds  []string // "undici 6.24.1 (scenarios/truth/undici.yaml)": a program and version it held for
	Failed []string // each failed check that reads a run of the preset's real program, with its file
	NoRun  []string // why a run of its real program did not run, or gave no verdict
}

var variantRead = regexp.MustCompile(`variant\('([^']+)'\)|plan_reaches\('([^']+)',\s*'([^']+)'\)`)

// truthFile names a record's file as the bundled suite does: scenarios/truth/NAME.yaml.
func truthFile(file string) string {
	return "scenarios/truth/" + filepath.Base(file)
}

// Verdicts reads the records of a truth run: for every preset a truth file verifies, the
// real programs that ran beside it and the checks that read their runs.
func Verdicts(res *report.Results) []*Verdict {
	by := map[string]*Verdict{}
	for _, reg := range []map[string]*scenario.Preset{scenario.ServerPresets, scenario.ClientPresets} {
		for name, p := range reg {
			if len(p.Checked) > 0 {
				by[name] = &Verdict{Preset: name}
			}
		}
	}
	// real[scenario][variant] is the preset whose real program the run ran.
	real := map[string]map[string]string{}
	runs := map[string]*report.Run{}
	for i := range res.Runs {
		r := &res.Runs[i]
		runs[r.Scenario+"\x00"+r.Variant] = r
		for _, m := range runner.ModelledPrograms(r) {
			v := by[m.Preset.Name]
			if v == nil {
				continue
			}
			if real[r.Scenario] == nil {
				real[r.Scenario] = map[string]string{}
			}
			real[r.Scenario][r.Variant] = v.Preset
			v.ran(r, m)
		}
	}
	for i := range res.Runs {
		r := &res.Runs[i]
		if r.Status == report.StatusNotRun || r.Status == report.StatusError {
			if p := real[r.Scenario][r.Variant]; p != "" {
				by[p].NoRun = append(by[p].NoRun, fmt.Sprintf("%s / %s: %s: %s%s", truthFile(r.File), r.Variant, r.Status, r.Reason, r.Error))
			}
		}
	}
	for i := range res.Scenarios {
		s := &res.Scenarios[i]
		for _, c := range s.Checks {
			for _, p := range readers(c, real[s.Scenario]) {
				by[p].judge(c, truthFile(s.File), runs, s.Scenario)
			}
		}
	}
	out := make([]*Verdict, 0, len(by))
	for _, v := range by {
		sort.Strings(v.Holds)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Preset < out[j].Preset })
	return out
}

// ran adds a run of the preset's real program: the version it held for, unless the run
// gave no verdict.
func (v *Verdict) ran(r *report.Run, m runner.Modelled) {
	if r.Status != report.StatusPass && r.Status != report.StatusFail {
		return
	}
	version := m.Version
	if version == "" {
		version = "(version unknown)"
	} else if !m.Preset.Verifies(m.Program, version) {
		version += ", not among the versions verified (" + m.Preset.VersionsOf(m.Program) + ")"
	}
	h := fmt.Sprintf("%s %s (%s)", m.Program, version, truthFile(r.File))
	for _, have := range v.Holds {
		if have == h {
			return
		}
	}
	v.Holds = append(v.Holds, h)
}

// readers are the presets whose real program ran in a variant the check reads.
func readers(c report.Check, real map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range variantRead.FindAllStringSubmatch(c.Expr, -1) {
		for _, name := range m[1:] { // variant('x'), or both names of plan_reaches('x', 'y')
			if p := real[name]; name != "" && p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// judge adds a compare check that reads the preset's real program: failed, or not
// evaluated; and the failed expect checks of the runs it reads.
func (v *Verdict) judge(c report.Check, file string, runs map[string]*report.Run, sc string) {
	switch c.Verdict() {
	case report.VerdictFail:
		v.Failed = append(v.Failed, fmt.Sprintf("%s:%d: %s (%s)", file, c.Line, c.Expr, report.Observed(c.Observed)))
	case report.VerdictNotEvaluated:
		v.NoRun = append(v.NoRun, fmt.Sprintf("%s:%d: %s: not evaluated: %s", file, c.Line, c.Expr, c.NotEvaluated))
	}
	for _, m := range variantRead.FindAllStringSubmatch(c.Expr, -1) {
		for _, name := range m[1:] {
			if r := runs[sc+"\x00"+name]; name != "" && r != nil {
				v.failedExpects(r, file)
			}
		}
	}
}

// failedExpects adds the failed expect checks of a run a compare check reads.
func (v *Verdict) failedExpects(r *report.Run, file string) {
	for _, e := range r.Checks {
		if e.Kind == "expect" && e.Verdict() == report.VerdictFail {
			f := fmt.Sprintf("%s:%d: %s: %s (%s)", file, e.Line, r.Variant, e.Expr, report.Observed(e.Observed))
			if !contains(v.Failed, f) {
				v.Failed = append(v.Failed, f)
			}
		}
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
// per preset to w and returns kalab truth's exit code: 1 when a preset does not hold (each
// named on errw), else 3 when a program is missing or a run gave no verdict, else runCode.
// A runCode other than 0, 1 and 3 (bad flags, the help) is returned as it is.
func Report(w, errw io.Writer, dir string, runCode int) int {
	if runCode != exitOK && runCode != exitFailed && runCode != exitNoVerdict {
		return runCode
	}
	res, err := report.ReadAny(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		fmt.Fprintf(errw, "kalab truth: %v\n", err)
		return exitNoVerdict
	}
	code := runCode
	failed, missing := false, false
	fmt.Fprintln(w, "\npresets against the programs installed here:")
	for _, v := range Verdicts(res) {
		switch {
		case len(v.Failed) > 0:
			failed = true
			fmt.Fprintf(w, "  %s: DOES NOT HOLD for %s\n", v.Preset, orNone(v.Holds))
			for _, f := range v.Failed {
				fmt.Fprintf(w, "    %s\n", f)
			}
			fmt.Fprintf(errw, "kalab truth: preset %s does not hold (%d failed check%s)\n", v.Preset, len(v.Failed), plural(len(v.Failed)))
		case len(v.NoRun) > 0:
			missing = true
			fmt.Fprintf(w, "  %s: NO VERDICT\n", v.Preset)
			for _, f := range v.NoRun {
				fmt.Fprintf(w, "    %s\n", f)
			}
		case len(v.Holds) == 0: // a --filter left its truth files out
			fmt.Fprintf(w, "  %s: not in these results (no run of its real program)\n", v.Preset)
		default:
			fmt.Fprintf(w, "  %s: holds for %s\n", v.Preset, strings.Join(v.Holds, "; "))
		}
	}
	switch {
	case failed:
		code = exitFailed
	case code == exitFailed:
		fmt.Fprintln(errw, "kalab truth: a check of a truth file failed that reads no preset's real program (see above)")
	case missing:
		code = exitNoVerdict
	}
	return code
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "no program"
	}
	return strings.Join(list, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
