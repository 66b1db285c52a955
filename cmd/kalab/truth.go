package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/help"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/truth"
)

// cmdTruth is kalab truth: kalab run over the truth files the binary embeds, with kalab's
// own programs allowed, then a verdict per preset and version of its real program
// (cmd/kalab/internal/truth). It takes no files: a file of the user's is no truth file, and
// would run with programs allowed that its own kalab run would refuse.
func cmdTruth(args []string, stdout, stderr io.Writer) int {
	runArgs := truth.RunArgs(args)
	f, code, ok := parseRunFlagsOf("truth", help.Truth, runArgs, stdout, stderr)
	if !ok {
		return code
	}
	if files := f.fs.Args(); len(files) > 1 {
		fmt.Fprintf(stderr, "kalab truth: %s: kalab truth takes no files; it runs the truth files it embeds (--filter '^truth-go/' runs some of them), and kalab run --allow-exec=bundled FILE runs a file of yours with kalab's programs\n", files[0])
		return exitInvalid
	}
	latest := filepath.Join(f.out, "latest")
	before, _ := os.Readlink(latest)
	code = cmdRun(runArgs, stdout, stderr)
	if after, err := os.Readlink(latest); err != nil || after == before {
		return code // no results of this run to judge (kalab run said why); never an earlier run's
	}
	return truth.Report(stdout, stderr, latest, code)
}
