package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/htmlreport"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/outputs"
	"github.com/kalab-dev/kalab/engine/report/baseline"
)

// cmdReport writes the HTML report of a results directory.
func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("report", "report [flags] [RESULTS_DIR]  (default: results/latest)", stdout, stderr)
	out := fs.StringP("out", "o", "", "directory that receives report.html, as --out of run and merge names a directory (default: RESULTS_DIR)")
	html := fs.String("html", "", "the HTML file to write, when a name other than DIR/report.html is wanted")
	metrics := fs.String("metrics", "", "write the runs' metrics, checks and predictions in the Prometheus text format to this file (docs/metrics-export.md); the HTML report only with --out or --html")
	basePath := fs.String("baseline", "", "compare every run with this baseline (a results.jsonl or its directory): its runs beside them, regressions marked")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	log, err := lo.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kalab report: %v\n", err)
		return exitInvalid
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "kalab report: want one results directory (got %d arguments)\n", fs.NArg())
		return exitInvalid
	}
	dir := resultsDir(fs.Args())
	if *metrics != "" {
		if err := outputs.MetricsFromDir(dir, *metrics); err != nil {
			fmt.Fprintf(stderr, "kalab report: --metrics: %v\n", err)
			return exitInvalid
		}
		fmt.Fprintf(stdout, "metrics: %s\n", *metrics)
		if *out == "" && *html == "" {
			return exitOK
		}
	}
	path, older, err := htmlreport.Path(dir, *out, *html)
	if err != nil {
		fmt.Fprintf(stderr, "kalab report: %v\n", err)
		return exitInvalid
	}
	if older {
		fmt.Fprintf(stderr, "kalab report: --out %s names a file; --out now names a directory (as for run and merge): use --html %s\n", *out, *out)
	}
	var base *baseline.Baseline
	if *basePath != "" {
		if base, err = baseline.Load(*basePath); err != nil {
			fmt.Fprintf(stderr, "kalab report: %v\n", err)
			return exitInvalid
		}
	}
	if err := htmlreport.Report(dir, path, kalabVersion(), base, log); err != nil {
		fmt.Fprintf(stderr, "kalab report: %v\n", err)
		if htmlreport.BadInput(err) {
			return exitInvalid
		}
		return exitEngine
	}
	fmt.Fprintf(stdout, "report: %s\n", path)
	return exitOK
}

// resultsDir is the results directory a command was given: results/latest by default; the
// results file itself names its directory.
func resultsDir(args []string) string {
	dir := filepath.Join("results", "latest")
	if len(args) == 1 {
		dir = args[0]
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() && filepath.Base(dir) == "results.jsonl" {
		dir = filepath.Dir(dir)
	}
	return dir
}
