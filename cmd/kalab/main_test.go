package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kalab-dev/kalab/engine/report"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kalab": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI as a user types it: testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			// The bundled suite, so scripts can validate it as a user would.
			dir, err := filepath.Abs("../../scenarios")
			if err != nil {
				return err
			}
			env.Setenv("SCENARIOS", dir)
			// The scripts test the command line, not the machine's timing: record timer
			// lateness but judge none, so a busy machine cannot turn a script's expected
			// verdict into exit 3 (engine/runner tests the timing judgment itself).
			env.Setenv("KALAB_LAG_TOLERANCE", "0")
			// The Jenkins JUnit schema, for scripts that check --junit with xmllint.
			xsd, err := filepath.Abs("../../engine/report/testdata/junit-10.xsd")
			env.Setenv("JUNIT_XSD", xsd)
			return err
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// sleep DURATION: wait, e.g. for a background run to get going.
			"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
				d, err := time.ParseDuration(args[0])
				ts.Check(err)
				time.Sleep(d)
			},
			// validresults DIR: every line under DIR passes schema/result.schema.json.
			"validresults": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: validresults DIR")
				}
				err := report.ValidateRunDir(ts.MkAbs(args[0]))
				if neg != (err != nil) {
					ts.Fatalf("validresults %s: %v", args[0], err)
				}
			},
		},
	})
}
