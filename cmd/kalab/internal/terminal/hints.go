package terminal

import (
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/engine/report"
)

// UnjudgedHint tells why the exit code is 3 when every run passed: compare checks the
// machine's timing left without a verdict.
func UnjudgedHint(w io.Writer, name string, checks []report.Check) {
	fmt.Fprintf(w, "kalab %s: %d compare check%s not evaluated, the machine's timing could change %s verdict (exit 3); try --parallel 1, a larger --time-scale or a quieter machine:\n",
		name, len(checks), plural(len(checks)), map[bool]string{true: "its", false: "their"}[len(checks) == 1])
	for _, c := range checks {
		fmt.Fprintf(w, "  %s:%d:%d: %s\n", c.File, c.Line, c.Col, c.Expr)
	}
}

// NotRunHint tells, at the end, why the exit code is 3 when every run that ran passed:
// the programs to install, or --allow-missing.
func NotRunHint(w io.Writer, name string, runs []*report.Run) {
	fmt.Fprintf(w, "kalab %s: %d run%s not run here, because a program is not installed; the checks that read them were not evaluated (exit 3):\n",
		name, len(runs), plural(len(runs)))
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Reason] {
			seen[r.Reason] = true
			fmt.Fprintf(w, "  %s\n", r.Reason)
		}
	}
	if name != "run" {
		fmt.Fprintf(w, "install what is named above where the shards run, and run them again (kalab help verdicts)\n")
		return
	}
	fmt.Fprintf(w, "install what is named above, or rerun with --allow-missing to accept runs that cannot run here (kalab help verdicts)\n")
}
