package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time with -ldflags "-X main.version=... -X
// main.commit=..." (the release build does); otherwise the build info says which module
// version and commit the binary was built from.
var version, commit = "", ""

// buildVersion is what the binary knows about its origin.
type buildVersion struct {
	module   string // module version: a tag, a pseudo-version, or "" for (devel)
	revision string // vcs.revision
	time     string // vcs.time
	modified bool   // vcs.modified: built from a tree with uncommitted changes
}

func readBuildVersion() buildVersion {
	var v buildVersion
	if commit != "none" { // what goreleaser stamps when git could not tell it
		v.revision = commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if m := bi.Main.Version; m != "" && m != "(devel)" {
		v.module = m
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// kalabVersion is the short version recorded in results: the -X version, else the module
// version, else the commit ("dev+" and 12 hex digits, "-dirty" when modified), else "dev".
func kalabVersion() string {
	return readBuildVersion().short()
}

func (v buildVersion) short() string {
	switch {
	case version != "":
		return version
	case v.module != "":
		return v.module
	case v.revision != "":
		return "dev+" + v.shortRevision()
	}
	return "dev"
}

func (v buildVersion) shortRevision() string {
	r := v.revision
	if len(r) > 12 {
		r = r[:12]
	}
	if v.modified {
		r += "-dirty"
	}
	return r
}

// long is what `kalab version` prints: the version, the commit and when it was made, the Go
// release, and what to do when nothing is known.
func (v buildVersion) long() string {
	s := "kalab " + v.short()
	if v.revision != "" {
		s += "\ncommit " + v.revision
		if v.modified {
			s += " (modified)"
		}
		if v.time != "" {
			s += ", " + v.time
		}
	}
	s += "\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if v.module == "" && v.revision == "" && version == "" {
		s += "(no module version or commit recorded: build with `go build` or `go install` in a git checkout, without -buildvcs=false)\n"
	}
	return s
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs, _ := flagSet("version", "version", stdout, stderr)
	short := fs.Bool("short", false, "print only the version")
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	v := readBuildVersion()
	if *short {
		fmt.Fprintln(stdout, "kalab "+v.short())
		return exitOK
	}
	fmt.Fprint(stdout, v.long())
	return exitOK
}
