package htmlreport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/atomicfile"
	"github.com/kalab-dev/kalab/engine/report/baseline"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// errInput marks a results directory the report cannot read.
var errInput = errors.New("cannot read the results")

// BadInput reports whether err, from Report, is the input's fault: results it cannot
// read, or a path it refuses to replace (kalab report then exits 2).
func BadInput(err error) bool {
	return errors.Is(err, errInput) || errors.As(err, new(*atomicfile.RefusedError))
}

// CheckPath checks, before anything runs, that path can take the report when it is
// written whole at the end: a regular file or a new path.
func CheckPath(path string) error { return atomicfile.Check(path) }

// Report renders the results directory dir into the file path, compared with base when it
// is not nil. The scenario files the results name give each scenario's description, the
// plan's order of their runs, and their baseline tolerances; a file that is gone or no
// longer loads is skipped. log hears of runs drawn without their requests.
func Report(dir, path, version string, base *baseline.Baseline, log zerolog.Logger) error {
	res, err := Load(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", errInput, err)
	}
	if len(res.Runs) == 0 {
		return fmt.Errorf("%w: %s holds no run records", errInput, filepath.Join(dir, "results.jsonl"))
	}
	for _, rd := range res.Runs {
		if rd.Missing != "" {
			log.Debug().Str("run", rd.Scenario+"/"+rd.Variant).Str("missing", rd.Missing).Msg("run drawn without its requests")
		}
	}
	opt := Options{Version: version, Descriptions: map[string]string{}}
	tols := &baseline.Tolerances{Scenarios: map[string]baseline.ScenarioTolerances{}}
	for _, f := range scenarioFiles(res) {
		plan, err := scenario.LoadFiles([]string{f})
		if err != nil {
			log.Debug().Str("file", f).Err(err).Msg("scenario file does not load; its description is left out")
			continue
		}
		for _, s := range plan.Scenarios {
			opt.Descriptions[s.Name] = s.Description
			if len(s.Baseline) > 0 {
				// The tolerances kalab diff applies: the scenario files' baseline sections.
				tols.Scenarios[s.Name] = baseline.ScenarioTolerances{File: s.File, Rules: s.Baseline}
			}
			for _, r := range s.Runs {
				opt.Order = append(opt.Order, RunKey{Scenario: s.Name, Variant: r.Variant})
			}
		}
	}
	if base != nil {
		opt.Baseline, opt.Tolerances = base, tols
	}
	return WriteFile(path, res, opt)
}

// scenarioFiles are the scenario files the results name that exist here, sorted.
func scenarioFiles(res *Results) []string {
	files := map[string]bool{}
	for _, r := range res.Runs {
		if r.File != "" {
			files[r.File] = true
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		if _, err := os.Stat(f); err == nil {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	return names
}

// Path is the HTML file kalab report writes for the results in dir. out names a directory,
// as --out does for run and merge (made when missing); html names the file. An out ending
// in .html is the older spelling of html: still taken, and older says so.
func Path(dir, out, html string) (path string, older bool, err error) {
	switch {
	case out != "" && html != "":
		return "", false, errors.New("--out names a directory and --html a file: give one of them")
	case html != "":
		return html, false, nil
	case out == "":
		return filepath.Join(dir, "report.html"), false, nil
	case isHTMLName(out):
		return out, true, nil
	}
	if err := os.MkdirAll(out, atomicfile.DirMode); err != nil {
		return "", false, err
	}
	return filepath.Join(out, "report.html"), false, nil
}

// isHTMLName reports whether a path names an HTML file rather than a directory.
func isHTMLName(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	return ext == ".html" || ext == ".htm"
}
