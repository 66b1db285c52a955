package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kalab-dev/kalab/engine/report"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kalab": main, // as the binary runs: inside the harness that gives it a virtual clock
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
			xsd, err := filepath.Abs("../../cmd/kalab/internal/ci/testdata/junit-10.xsd")
			env.Setenv("JUNIT_XSD", xsd)
			return err
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "tmpfs":
				return canMountTmpfs(), nil
			case "nodac":
				return canDropDAC(), nil
			case "promtool":
				// Installed, or, under CI=true, where every program a test needs is
				// installed, a failure rather than a skip.
				_, err := exec.LookPath("promtool")
				if err != nil && os.Getenv("CI") == "true" {
					return false, errors.New("promtool is not installed (Debian package prometheus); CI=true needs it")
				}
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// sleep DURATION: wait, e.g. for a background run to get going.
			"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
				d, err := time.ParseDuration(args[0])
				ts.Check(err)
				time.Sleep(d)
			},
			// waitfor GLOB REGEXP: wait until a file GLOB names holds a line REGEXP matches,
			// e.g. a background run's record; a minute without one fails the script. A fixed
			// sleep would bet on how fast a busy machine gets there.
			"waitfor": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 || neg {
					ts.Fatalf("usage: waitfor GLOB REGEXP")
				}
				re, err := regexp.Compile("(?m)" + args[1])
				ts.Check(err)
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
					if fileMatches(ts.MkAbs(args[0]), re) {
						return
					}
					if time.Now().After(deadline) {
						ts.Fatalf("waitfor: no file %s held a line matching %q within a minute", args[0], args[1])
					}
				}
			},
			// exits CODE PROG ARGS...: run PROG, which must exit with CODE; its output is
			// kept for stdout and stderr as exec keeps it.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 || neg {
					ts.Fatalf("usage: exits CODE PROG ARGS...")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee):
					got = ee.ExitCode()
				case err != nil:
					ts.Fatalf("%s: %v", args[1], err)
				}
				if got != want {
					ts.Fatalf("%s exited %d; want %d", args[1], got, want)
				}
			},
			// promcheck FILE: promtool check metrics (Prometheus's own parser and linter)
			// accepts FILE; a script guards it with [promtool].
			"promcheck": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: promcheck FILE")
				}
				cmd := exec.Command("promtool", "check", "metrics")
				f, err := os.Open(ts.MkAbs(args[0]))
				ts.Check(err)
				defer f.Close()
				cmd.Stdin = f
				if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
					ts.Fatalf("promtool check metrics < %s: %v\n%s", args[0], err, out)
				}
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

// fileMatches reports whether a file glob names holds a match of re.
func fileMatches(glob string, re *regexp.Regexp) bool {
	paths, _ := filepath.Glob(glob) // a malformed pattern matches nothing, and the wait fails
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && re.Match(b) {
			return true
		}
	}
	return false
}

// canMountTmpfs reports whether a script can mount a tmpfs in a private mount namespace.
func canMountTmpfs() bool {
	if _, err := exec.LookPath("unshare"); err != nil {
		return false
	}
	dir, err := os.MkdirTemp("", "kalab-tmpfs-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	return exec.Command("unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", dir).Run() == nil
}

// canDropDAC reports whether a script can run a program that a directory's mode keeps from
// writing it: any user but root, and root through setpriv without CAP_DAC_OVERRIDE.
func canDropDAC() bool {
	if os.Geteuid() != 0 {
		return true
	}
	return exec.Command("setpriv", "--bounding-set=-dac_override,-dac_read_search", "true").Run() == nil
}
