package main

import (
	"fmt"
	"io"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/buildinfo"
)

// version and commit are set at build time with -ldflags "-X main.version=... -X
// main.commit=..." (the release build does); otherwise the build info says which module
// version and commit the binary was built from (cmd/kalab/internal/buildinfo).
var version, commit = "", ""

// kalabVersion is the short version recorded in results.
func kalabVersion() string { return buildinfo.Read(version, commit).Short() }

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs, _ := flagSet("version", "version", stdout, stderr)
	short := fs.Bool("short", false, "print only the version")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	v := buildinfo.Read(version, commit)
	if *short {
		fmt.Fprintln(stdout, "kalab "+v.Short())
		return exitOK
	}
	fmt.Fprint(stdout, v.Long())
	return exitOK
}
