// Package outputs writes the report files kalab run and kalab merge add beside
// results.jsonl when asked: JUnit (--junit), the HTML report (--html) and the Prometheus
// text exposition (--metrics). Each path is checked before anything runs and written whole
// when the runs have ended.
package outputs

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/ci"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/promtext"
	"github.com/kalab-dev/kalab/engine/gate"
	"github.com/kalab-dev/kalab/engine/report"
)

// MetricsUsage is --metrics's help.
const MetricsUsage = "also write the runs' metrics, checks and predictions in the Prometheus text format to this file, for node_exporter's textfile collector or a Pushgateway (docs/metrics-export.md; replaced whole)"

// Paths are the report files asked for; an empty path is not written.
type Paths struct{ JUnit, HTML, Metrics string }

// DefineMetrics defines --metrics on fs.
func (p *Paths) DefineMetrics(fs *pflag.FlagSet) {
	fs.StringVar(&p.Metrics, "metrics", "", MetricsUsage)
}

// Check checks every path before anything runs, so that a bad one is found at once rather
// than after the last run: each must be a regular file or a new path.
func (p Paths) Check() error {
	for _, c := range []struct {
		flag, path string
		check      func(string) error
	}{{"--junit", p.JUnit, ci.CheckPath}, {"--html", p.HTML, htmlreport.CheckPath}, {"--metrics", p.Metrics, promtext.CheckPath}} {
		if c.path == "" {
			continue
		}
		if err := c.check(c.path); err != nil {
			return fmt.Errorf("%s: %w", c.flag, err)
		}
	}
	return nil
}

// Input is what the files are written from: the outcome's runs and its directory.
type Input struct {
	Dir         string
	Runs        []*report.Run
	Scenarios   []*report.Scenario
	Missing     []gate.RunDiff
	FailMissing bool
	Version     string
	Log         zerolog.Logger
}

// Write writes each file asked for, saying on stdout where the HTML report and the metrics
// went; it returns the first error, after trying every file.
func (p Paths) Write(stdout io.Writer, in Input) error {
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	if p.JUnit != "" {
		keep(ci.WriteJUnitFile(p.JUnit, ci.JUnitInput{Runs: in.Runs, Scenarios: in.Scenarios, Missing: in.Missing, FailMissing: in.FailMissing}))
	}
	if p.HTML != "" {
		if herr := htmlreport.Report(in.Dir, p.HTML, in.Version, nil, in.Log); herr != nil {
			keep(fmt.Errorf("--html: %w", herr))
		} else {
			fmt.Fprintf(stdout, "report: %s\n", p.HTML)
		}
	}
	if p.Metrics != "" {
		if merr := promtext.WriteFile(p.Metrics, in.Runs, in.Scenarios); merr != nil {
			keep(fmt.Errorf("--metrics: %w", merr))
		} else {
			fmt.Fprintf(stdout, "metrics: %s\n", p.Metrics)
		}
	}
	return err
}

// MetricsFromDir writes the exposition of the results file in dir (kalab report --metrics).
func MetricsFromDir(dir, path string) error {
	res, err := report.ReadAny(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return err
	}
	runs := make([]*report.Run, len(res.Runs))
	for i := range res.Runs {
		runs[i] = &res.Runs[i]
	}
	scs := make([]*report.Scenario, len(res.Scenarios))
	for i := range res.Scenarios {
		scs[i] = &res.Scenarios[i]
	}
	return promtext.WriteFile(path, runs, scs)
}
