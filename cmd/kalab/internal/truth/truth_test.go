package truth

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// results is a truth run of undici.yaml and curl.yaml as records: the real fetch at
// undici, the real curl at 7.88.1, and the compare checks that read them.
func results(undici string, fetchStatus string, cmpPass bool) *report.Results {
	run := func(sc, file, variant, status string, client *report.ClientRuntime) report.Run {
		return report.Run{Scenario: sc, File: "/cache/builtin/truth/" + file, Variant: variant, Status: status, Client: client,
			Reason: map[bool]string{true: "the node-fetch adapter needs node, which is not on PATH"}[status == report.StatusNotRun]}
	}
	fetch := &report.ClientRuntime{Adapter: "node-fetch", Version: "node 20.20.2 undici " + undici + " openssl 3.0.19"}
	curl := &report.ClientRuntime{Adapter: "curl", Version: "curl 7.88.1 (x86_64-pc-linux-gnu) libcurl/7.88.1"}
	return &report.Results{
		Runs: []report.Run{
			run("truth-undici", "undici.yaml", "model-awaited", report.StatusPass, nil),
			run("truth-undici", "undici.yaml", "real-awaited", fetchStatus, fetch),
			run("truth-curl", "curl.yaml", "model-multi", report.StatusPass, nil),
			run("truth-curl", "curl.yaml", "real-multi", report.StatusPass, curl),
		},
		Scenarios: []report.Scenario{
			{Scenario: "truth-undici", File: "/cache/builtin/truth/undici.yaml", Checks: []report.Check{{Kind: "compare", Line: 40,
				Expr: "variant('real-awaited').connections == variant('model-awaited').connections", Pass: cmpPass,
				Observed: map[string]float64{"variant('real-awaited').connections": 3, "variant('model-awaited').connections": 2}}}},
			{Scenario: "truth-curl", File: "/cache/builtin/truth/curl.yaml", Checks: []report.Check{{Kind: "compare", Line: 17,
				Expr: "variant('real-multi').errors == variant('model-multi').errors", Pass: true}}},
		},
	}
}

func verdictOf(t *testing.T, res *report.Results, preset string) *Verdict {
	t.Helper()
	for _, v := range Verdicts(res) {
		if v.Preset == preset {
			return v
		}
	}
	t.Fatalf("no verdict for %s", preset)
	return nil
}

// A preset holds for the version its real program ran at when the compare checks that read
// that program's runs pass; a failed one names the preset and the check; a program not
// installed is no verdict; a version outside the verified list is said.
func TestVerdicts(t *testing.T) {
	t.Parallel()
	one := func(v *Verdict) *Version {
		t.Helper()
		if len(v.Versions) != 1 {
			t.Fatalf("%s: %d versions, want 1", v.Preset, len(v.Versions))
		}
		return v.Versions[0]
	}
	g := one(verdictOf(t, results("6.24.1", report.StatusPass, true), "undici"))
	if !g.Holds() || g.Summary() != "holds for undici 6.24.1 (scenarios/truth/undici.yaml)" {
		t.Errorf("undici passing: %+v", g)
	}
	if c := one(verdictOf(t, results("6.24.1", report.StatusPass, false), "curl-multi")); !c.Holds() {
		t.Errorf("a failed undici check is curl-multi's too: %+v", c)
	}
	g = one(verdictOf(t, results("7.1.0", report.StatusPass, false), "undici"))
	if g.Holds() || g.FailedRuns != 1 || len(g.Failed) != 1 || !strings.Contains(g.Failed[0], "scenarios/truth/undici.yaml:40: variant('real-awaited').connections") ||
		g.Label != "undici 7.1.0, not among the versions verified ("+scenario.ClientPresets["undici"].VersionsOf("undici")+")" {
		t.Errorf("undici 7.1.0 failing: %+v", g)
	}
	if g = one(verdictOf(t, results("7.30.2", report.StatusPass, true), "undici")); !g.Holds() || g.Label != "undici 7.30.2, verified as 7.30.x (7.30.3 checked)" {
		t.Errorf("undici 7.30.2, a patch of a checked release: %+v", g)
	}
	race := results("6.24.1", report.StatusPass, false)
	race.Scenarios[0].Checks[0].Expr = "plan_reaches('model-awaited', 'real-awaited')"
	if g = one(verdictOf(t, race, "undici")); g.FailedRuns != 1 || len(g.Failed) != 1 || !strings.Contains(g.Failed[0], "undici.yaml:40: plan_reaches('model-awaited', 'real-awaited')") {
		t.Errorf("a failed plan_reaches that weighs real fetch is not undici's failure: %+v", g)
	}
	g = one(verdictOf(t, results("", report.StatusNotRun, true), "undici"))
	if g.Holds() || g.NoVerdictRuns != 1 || len(g.NoVerdict) != 1 || !strings.Contains(g.NoVerdict[0], "not on PATH") {
		t.Errorf("undici missing: %+v", g)
	}
	// A run that never started its program is known by the program and version its settings
	// ask for.
	res := &report.Results{Runs: []report.Run{{Scenario: "truth-go-1.22", File: "go-1.22.yaml", Variant: "real-race", Status: report.StatusNotRun,
		Reason: "GOTOOLCHAIN=go1.22.12: the proxy cannot be reached", Params: json.RawMessage(`{"client":{"exec":{"adapter":"go-http","version":"go1.22.12"}}}`)}}}
	if g = one(verdictOf(t, res, "go-default")); g.Name() != "go 1.22.12" || g.NoVerdictRuns != 1 {
		t.Errorf("go 1.22.12 not run: %+v", g)
	}
}

// kalab truth's exit code: 1 naming the preset that does not hold, 3 when a program is
// missing (and no preset failed), 0 when every preset holds; a code kalab run ended with
// that is not a verdict (bad flags) is passed on.
func TestReportExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		res       *report.Results
		runCode   int
		want      int
		out, errw string
	}{
		{"holds", results("6.24.1", report.StatusPass, true), 0, 0, "  undici: holds for undici 6.24.1 (scenarios/truth/undici.yaml)", ""},
		{"fails", results("6.24.1", report.StatusPass, false), 1, 1, "  undici: DOES NOT HOLD for undici 6.24.1", "kalab truth: preset undici does not hold"},
		{"missing", results("", report.StatusNotRun, true), 3, 3, "  undici: NO VERDICT", ""},
		{"bad-flags", nil, 2, 2, "", ""},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if c.res != nil {
			dir = writeResults(t, c.res)
		}
		var out, errw bytes.Buffer
		if got := Report(&out, &errw, dir, c.runCode); got != c.want {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, got, c.want, out.String(), errw.String())
		}
		if !strings.Contains(out.String(), c.out) || !strings.Contains(errw.String(), c.errw) {
			t.Errorf("%s: want %q and %q:\n%s\n%s", c.name, c.out, c.errw, out.String(), errw.String())
		}
	}
}

// goRecords is a truth run of go-default against three Go releases: go.yaml at 1.26.8 (its
// two real runs agree), go-1.22.yaml at 1.22.12 (six real runs: five agree, real-race was
// too noisy to have a verdict, so the compare that reads it was not evaluated) and
// go-1.24.yaml at 1.24.4 (one real run, whose compare failed).
func goRecords() *report.Results {
	res := &report.Results{}
	add := func(sc, file, goVersion string, variants []string, status map[string]string, cmp map[string]string) {
		s := report.Scenario{Scenario: sc, File: "/tmp/kalab-builtin-x/scenarios/truth/" + file}
		for i, v := range variants {
			st := report.StatusPass
			if status[v] != "" {
				st = status[v]
			}
			res.Runs = append(res.Runs, report.Run{Scenario: sc, File: s.File, Variant: "model-" + v, Status: report.StatusPass},
				report.Run{Scenario: sc, File: s.File, Variant: "real-" + v, Status: st,
					Error:  map[bool]string{true: "noisy: timers 310 ms late against a tolerance of 100 ms"}[st == report.StatusError],
					Client: &report.ClientRuntime{Adapter: "go-http", Version: "go version go" + goVersion + " linux/amd64"}})
			c := report.Check{Kind: "compare", Line: 50 + i, Pass: true,
				Expr: "variant('real-" + v + "').connections == variant('model-" + v + "').connections"}
			switch cmp[v] {
			case "fail":
				c.Pass, c.Observed = false, map[string]float64{"variant('real-" + v + "').connections": 6, "variant('model-" + v + "').connections": 5}
			case "unevaluated":
				c.Pass, c.NotEvaluated = false, "variant('real-"+v+"') has no verdict"
			}
			s.Checks = append(s.Checks, c)
		}
		res.Scenarios = append(res.Scenarios, s)
	}
	six := []string{"reuse", "race", "fin-first", "resume", "hint", "pool"}
	add("truth-go", "go.yaml", "1.26.8", six[:2], nil, nil)
	add("truth-go-1.22", "go-1.22.yaml", "1.22.12", six, map[string]string{"race": report.StatusError}, map[string]string{"race": "unevaluated"})
	add("truth-go-1.24", "go-1.24.yaml", "1.24.4", six[:1], nil, map[string]string{"reuse": "fail"})
	return res
}

// unverified124 is how a version outside go-default's list is named.
var unverified124 = ", not among the versions verified (" + scenario.ClientPresets["go-default"].VersionsOf("go") + ")"

// A verdict is per program version: one release that held is said to hold even when another
// had a run without a verdict and a third failed, each with its own count of runs.
func TestVerdictsPerVersion(t *testing.T) {
	t.Parallel()
	v := verdictOf(t, goRecords(), "go-default")
	var got []string
	for _, g := range v.Versions {
		got = append(got, g.Summary())
	}
	want := []string{
		"NO VERDICT for go 1.22.12 (scenarios/truth/go-1.22.yaml): 5 of 6 runs agree, 1 no verdict",
		"DOES NOT HOLD for go 1.24.4" + unverified124 + " (scenarios/truth/go-1.24.yaml): 0 of 1 run agrees, 1 failed",
		"holds for go 1.26.8 (scenarios/truth/go.yaml)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("go-default by version:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g := v.Versions[0]
	if len(g.NoVerdict) != 1 || !strings.Contains(g.NoVerdict[0], "scenarios/truth/go-1.22.yaml / real-race: error: noisy: timers 310 ms late") {
		t.Errorf("go 1.22.12: why no verdict: %q", g.NoVerdict)
	}
	g = v.Versions[1]
	if len(g.Failed) != 1 || g.Failed[0] != "scenarios/truth/go-1.24.yaml:50: variant('real-reuse').connections == variant('model-reuse').connections (variant('model-reuse').connections=5, variant('real-reuse').connections=6)" {
		t.Errorf("go 1.24.4: failed: %q", g.Failed)
	}
}

// kalab truth's report says the same, one line a preset, then why for each version that did
// not hold; the exit code is 1 for the version that failed, and stderr names it.
func TestReportPerVersion(t *testing.T) {
	t.Parallel()
	var out, errw bytes.Buffer
	dir := writeResults(t, goRecords())
	if code := Report(&out, &errw, dir, exitFailed); code != exitFailed {
		t.Errorf("exit %d, want 1", code)
	}
	for _, line := range []string{
		"  go-default: NO VERDICT for go 1.22.12 (scenarios/truth/go-1.22.yaml): 5 of 6 runs agree, 1 no verdict; DOES NOT HOLD for go 1.24.4" + unverified124 + " (scenarios/truth/go-1.24.yaml): 0 of 1 run agrees, 1 failed; holds for go 1.26.8 (scenarios/truth/go.yaml)\n",
		"\n    go 1.24.4 failed: scenarios/truth/go-1.24.yaml:50: variant('real-reuse').connections",
		"\n    go 1.22.12 no verdict: scenarios/truth/go-1.22.yaml / real-race: error: noisy: timers 310 ms late",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the report lacks %q:\n%s", line, out.String())
		}
	}
	if want := "kalab truth: preset go-default does not hold for go 1.24.4 (1 failed check)\n"; errw.String() != want {
		t.Errorf("stderr %q, want %q", errw.String(), want)
	}
}

// writeResults writes res as a run directory's results.jsonl.
func writeResults(t *testing.T, res *report.Results) string {
	t.Helper()
	dir := t.TempDir()
	var b bytes.Buffer
	for _, r := range res.Runs {
		r.Record, r.RecordVersion = "run", report.RecordVersion
		if r.Checks == nil {
			r.Checks = []report.Check{}
		}
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	for _, s := range res.Scenarios {
		s.Record, s.RecordVersion = "scenario", report.RecordVersion
		line, _ := json.Marshal(s)
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
