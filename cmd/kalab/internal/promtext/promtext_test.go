package promtext

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/testkit/reporttest"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// runs is a failed run with 15 reset errors on 57 connections, a check of each verdict and
// a prediction, recorded twice (the first record must give way to the second), and a run
// not run here.
func runs() ([]*report.Run, []*report.Scenario) {
	old := reporttest.Run("stale-race", "node-agent")
	old.Metrics.Errors, old.Clock = 99, "virtual"
	r := reporttest.Run("stale-race", "node-agent")
	r.Clock = "virtual"
	r.Status = report.StatusFail
	r.Metrics.Errors, r.Metrics.Connections, r.Metrics.ErrorsByClass.Reset = 15, 57, 15
	r.Metrics.PeakRSSMB, r.Metrics.CPUUsPerRequest = 2, 250
	r.Checks = []report.Check{
		{Kind: "expect", Expr: `errors <= 12`, File: "04.yaml", Line: 45, Col: 14},
		{Kind: "expect", Expr: `connections == 57`, Pass: true, File: "04.yaml", Line: 46, Col: 14},
		{Kind: "expect", Expr: "label \"quoted\" \\ and\nnewline", NotEvaluated: "a run it reads did not run", File: "04.yaml", Line: 47, Col: 14},
	}
	r.Predicted = &report.Predicted{Counts: []report.PredictedCount{
		{Metric: "errors", Predicted: true, Value: 15, Lo: 14, Hi: 16, Measured: 15, Verdict: report.ModelAgree},
		{Metric: "retries", Predicted: false, Verdict: report.ModelNotPredicted},
	}}
	skipped := reporttest.Run("stale-race", "undici")
	skipped.Status, skipped.Reason = report.StatusNotRun, "node is not installed"
	sc := &report.Scenario{Scenario: "stale-race", KalabVersion: "test", Checks: []report.Check{
		{Kind: "compare", Expr: "variant('a').errors < variant('b').errors", Pass: true, File: "04.yaml", Line: 60, Col: 5},
	}}
	return []*report.Run{old, r, skipped}, []*report.Scenario{sc}
}

// TestSamples: each run's metrics, status, checks and predictions are samples with the
// run's labels, in base units, the last record of a run winning.
func TestSamples(t *testing.T) {
	rs, scs := runs()
	var b bytes.Buffer
	if err := Write(&b, rs, scs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	const l = `clock="virtual",kalab_version="test",scenario="stale-race",variant="node-agent"`
	for _, want := range []string{
		"# TYPE kalab_errors gauge\n",
		"kalab_errors{" + l + "} 15\n",
		"kalab_connections{" + l + "} 57\n",
		`kalab_errors_by_class{class="reset",` + l + "} 15\n",
		`kalab_latency_seconds{clock="virtual",kalab_version="test",scenario="stale-race",stat="p50",variant="node-agent"} 0.155` + "\n",
		"kalab_total_seconds{" + l + "} 31\n",
		"kalab_peak_rss_bytes{" + l + "} 2097152\n",
		"kalab_cpu_seconds_per_request{" + l + "} 0.00025\n",
		`kalab_run_status{` + l[:len(l)-len(`,variant="node-agent"`)] + `,status="fail",variant="node-agent"} 1` + "\n",
		`kalab_check_passed{at="04.yaml:45:14",check="errors <= 12",` + l[:len(l)-len(`,scenario="stale-race",variant="node-agent"`)] + `,kind="expect",scenario="stale-race",variant="node-agent"} 0` + "\n",
		`kalab_check_passed{at="04.yaml:46:14",check="connections == 57",`,
		`kalab_checks{` + l + `,verdict="not-evaluated"} 1` + "\n",
		`kalab_predicted{clock="virtual",kalab_version="test",metric="errors",scenario="stale-race",variant="node-agent"} 15` + "\n",
		`kalab_predicted_agree{clock="virtual",kalab_version="test",metric="errors",`,
		`kalab_check_passed{at="04.yaml:60:5",check="variant('a').errors < variant('b').errors",kalab_version="test",kind="compare",scenario="stale-race"} 1` + "\n",
		`kalab_run_status{clock="real",kalab_version="test",scenario="stale-race",status="not-run",variant="undici"} 1` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, bad := range []string{"} 99\n", `metric="retries"`, "quoted", `kalab_errors{clock="real",kalab_version="test",scenario="stale-race",variant="undici"}`} {
		if strings.Contains(out, bad) {
			t.Errorf("has %q: a replaced record, a count not predicted, a check not evaluated, or metrics of a run not run", bad)
		}
	}
	if n := strings.Count(out, "# TYPE kalab_errors gauge\n"); n != 1 {
		t.Errorf("kalab_errors has %d TYPE lines, want 1 (a family's samples are written together)", n)
	}
}

// TestEscaping: label values with quotes, backslashes and newlines are escaped.
func TestEscaping(t *testing.T) {
	var b strings.Builder
	writeLabels(&b, []label{{"check", "a \"b\" \\ c\nd"}, {"empty", ""}})
	if got, want := b.String(), `{check="a \"b\" \\ c\nd"}`; got != want {
		t.Errorf("labels = %s, want %s", got, want)
	}
}

// TestPromtool: the file passes the Prometheus project's own parser and linter.
func TestPromtool(t *testing.T) {
	promtool := testci.Program(t, "promtool")
	rs, scs := runs()
	rs[1].Checks[2].NotEvaluated = "" // a label value with a quote, a backslash and a newline
	path := filepath.Join(t.TempDir(), "kalab.prom")
	if err := WriteFile(path, rs, scs); err != nil {
		t.Fatal(err)
	}
	PromtoolCheck(t, promtool, path)
}

// PromtoolCheck runs promtool check metrics on the file at path, failing t on any problem
// it reports.
func PromtoolCheck(t *testing.T, promtool, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
