package truth

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
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
	v := verdictOf(t, results("6.24.1", report.StatusPass, true), "undici")
	if len(v.Failed)+len(v.NoRun) > 0 || strings.Join(v.Holds, ";") != "undici 6.24.1 (scenarios/truth/undici.yaml)" {
		t.Errorf("undici passing: %+v", v)
	}
	if c := verdictOf(t, results("6.24.1", report.StatusPass, false), "curl-multi"); len(c.Failed) > 0 || len(c.Holds) != 1 {
		t.Errorf("a failed undici check is curl-multi's too: %+v", c)
	}
	v = verdictOf(t, results("7.1.0", report.StatusPass, false), "undici")
	if len(v.Failed) != 1 || !strings.Contains(v.Failed[0], "scenarios/truth/undici.yaml:40: variant('real-awaited').connections") ||
		!strings.Contains(v.Holds[0], "undici 7.1.0, not among the versions verified (6.24.1 on 2026-12-07, 7.30.3 on 2026-12-07)") {
		t.Errorf("undici 7.1.0 failing: %+v", v)
	}
	v = verdictOf(t, results("", report.StatusNotRun, true), "undici")
	if len(v.Holds) != 0 || len(v.NoRun) != 1 || !strings.Contains(v.NoRun[0], "not on PATH") {
		t.Errorf("undici missing: %+v", v)
	}
}

// kalab truth's exit code: 1 naming the preset that does not hold, 3 when a program is
// missing (and no preset failed), 0 when every preset holds; a code kalab run ended with
// that is not a verdict (bad flags) is passed on.
func TestReportExitCodes(t *testing.T) {
	t.Parallel()
	write := func(res *report.Results) string {
		dir := t.TempDir()
		var b bytes.Buffer
		for _, r := range res.Runs {
			r.Record, r.RecordVersion, r.Checks = "run", report.RecordVersion, []report.Check{}
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
			dir = write(c.res)
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
