package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// outputFormat is a command's --format: text for people, json for programs.
type outputFormat struct{ value *string }

func formatFlag(fs *pflag.FlagSet, jsonMeans string) outputFormat {
	return outputFormat{fs.String("format", "text", "output format: text, or "+jsonMeans)}
}

func (f outputFormat) json() bool { return *f.value == "json" }

func (f outputFormat) valid(stderr io.Writer, cmd string) bool {
	if *f.value == "text" || *f.value == "json" {
		return true
	}
	fmt.Fprintf(stderr, "kalab %s: --format %q: use text or json\n", cmd, *f.value)
	return false
}

// validateDocument is `kalab validate --format json`.
type validateDocument struct {
	Valid     bool                  `json:"valid"`
	Files     []string              `json:"files"`
	Runs      int                   `json:"runs"`
	Scenarios []validateScenario    `json:"scenarios"`
	Problems  []scenario.Diagnostic `json:"problems"`
	Error     string                `json:"error,omitempty"` // a problem that is not in a file (a path that does not exist)
}

type validateScenario struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Runs   int    `json:"runs"`
	Checks int    `json:"checks"`
}

// validateJSON loads and checks like loadPlan, and writes the outcome as one document;
// the exit code is the same as the text form's.
func validateJSON(args []string, stdout io.Writer, chk runner.CheckOptions) int {
	doc := validateDocument{Files: []string{}, Scenarios: []validateScenario{}, Problems: []scenario.Diagnostic{}}
	code := exitOK
	files, err := scenario.FindFiles(scenarioArgs(args))
	if err == nil {
		doc.Files = files
		var plan *scenario.Plan
		plan, err = scenario.LoadFiles(files)
		if err == nil {
			if ds := runner.Check(plan, chk); len(ds) > 0 {
				err = ds
			} else {
				doc.Runs = plan.Runs()
				for _, s := range plan.Scenarios {
					checks := len(s.Compare)
					for _, r := range s.Runs {
						checks += len(r.Expect)
					}
					doc.Scenarios = append(doc.Scenarios, validateScenario{s.Name, s.File, len(s.Runs), checks})
				}
			}
		}
	}
	var ds scenario.Diagnostics
	switch {
	case errors.As(err, &ds):
		doc.Problems = append(doc.Problems, ds...)
		code = exitInvalid
	case err != nil:
		doc.Error = err.Error()
		code = exitInvalid
	default:
		doc.Valid = true
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return exitEngine
	}
	return code
}
