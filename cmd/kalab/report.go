package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/htmlreport"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// cmdReport writes the HTML report of a results directory.
func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs, lo := flagSet("report", "report [flags] [RESULTS_DIR]  (default: results/latest)", stdout, stderr)
	out := fs.StringP("out", "o", "", "directory that receives report.html, as --out of run and merge names a directory (default: RESULTS_DIR)")
	html := fs.String("html", "", "the HTML file to write, when a name other than DIR/report.html is wanted")
	baseline := fs.String("baseline", "", "compare every run with this baseline (a results.jsonl or its directory): its runs beside them, regressions marked")
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
	dir := filepath.Join("results", "latest")
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() && filepath.Base(dir) == "results.jsonl" {
		dir = filepath.Dir(dir) // the results file itself names its directory
	}
	path, err := reportPath(dir, *out, *html, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kalab report: %v\n", err)
		return exitInvalid
	}
	var base *report.Baseline
	if *baseline != "" {
		if base, err = report.LoadBaseline(*baseline); err != nil {
			fmt.Fprintf(stderr, "kalab report: %v\n", err)
			return exitInvalid
		}
	}
	if err := writeHTMLReport(dir, path, base, log); err != nil {
		fmt.Fprintf(stderr, "kalab report: %v\n", err)
		if errors.Is(err, errReportInput) || errors.As(err, new(*atomicfile.RefusedError)) {
			return exitInvalid
		}
		return exitEngine
	}
	fmt.Fprintf(stdout, "report: %s\n", path)
	return exitOK
}

// reportPath is the HTML file kalab report writes. --out names a directory, as it does for
// run and merge; --html names the file. An --out ending in .html is the older spelling of
// --html: still taken, with a line saying so.
func reportPath(dir, out, html string, stderr io.Writer) (string, error) {
	switch {
	case out != "" && html != "":
		return "", errors.New("--out names a directory and --html a file: give one of them")
	case html != "":
		return html, nil
	case out == "":
		return filepath.Join(dir, "report.html"), nil
	case isHTMLName(out):
		fmt.Fprintf(stderr, "kalab report: --out %s names a file; --out now names a directory (as for run and merge): use --html %s\n", out, out)
		return out, nil
	}
	if err := os.MkdirAll(out, atomicfile.DirMode); err != nil {
		return "", err
	}
	return filepath.Join(out, "report.html"), nil
}

// isHTMLName reports whether a path names an HTML file rather than a directory.
func isHTMLName(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	return ext == ".html" || ext == ".htm"
}

// errReportInput marks a results directory the report cannot read.
var errReportInput = errors.New("cannot read the results")

// writeHTMLReport renders the results directory dir into the file path, compared with base
// when it is not nil.
func writeHTMLReport(dir, path string, base *report.Baseline, log zerolog.Logger) error {
	res, err := htmlreport.Load(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", errReportInput, err)
	}
	if len(res.Runs) == 0 {
		return fmt.Errorf("%w: %s holds no run records", errReportInput, filepath.Join(dir, "results.jsonl"))
	}
	for _, rd := range res.Runs {
		if rd.Missing != "" {
			log.Debug().Str("run", rd.Scenario+"/"+rd.Variant).Str("missing", rd.Missing).Msg("run drawn without its requests")
		}
	}
	desc, order := descriptions(res, log)
	opt := htmlreport.Options{Version: kalabVersion(), Descriptions: desc, Order: order}
	if base != nil {
		runs := make([]*report.Run, len(res.Runs))
		for i, rd := range res.Runs {
			runs[i] = &rd.Run
		}
		// The tolerances kalab diff applies: the scenario files' baseline sections.
		opt.Baseline, opt.Tolerances = base, &report.Tolerances{Scenarios: map[string]report.ScenarioTolerances{}}
		scenarioTolerances(runs, opt.Tolerances, io.Discard)
	}
	return htmlreport.WriteFile(path, res, opt)
}

// descriptions reads each scenario's description from the files the results name (the
// results do not carry it), and the plan's order of their runs, which the report's sections
// follow. A file that is gone or no longer loads is skipped.
func descriptions(res *htmlreport.Results, log zerolog.Logger) (map[string]string, []htmlreport.RunKey) {
	files := map[string]bool{}
	for _, r := range res.Runs {
		if r.File != "" {
			files[r.File] = true
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	out := map[string]string{}
	var order []htmlreport.RunKey
	for _, f := range names {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		plan, err := scenario.LoadFiles([]string{f})
		if err != nil {
			log.Debug().Str("file", f).Err(err).Msg("scenario file does not load; its description is left out")
			continue
		}
		for _, s := range plan.Scenarios {
			out[s.Name] = s.Description
			for _, r := range s.Runs {
				order = append(order, htmlreport.RunKey{Scenario: s.Name, Variant: r.Variant})
			}
		}
	}
	return out, order
}
