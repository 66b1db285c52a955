// Package buildinfo says what a kalab binary knows of its origin: the version stamped at
// build time, else the module version, the commit and whether its tree had changes.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what the binary knows about its origin.
type Info struct {
	Stamped  string // the version stamped at build time (-X), if any
	Module   string // module version: a tag, a pseudo-version, or "" for (devel)
	Revision string // vcs.revision
	Time     string // vcs.time
	Modified bool   // vcs.modified: built from a tree with uncommitted changes
}

// Read reads the build info; stamped and commit are what the build stamped (-X), if it did.
func Read(stamped, commit string) Info {
	v := Info{Stamped: stamped}
	if commit != "none" { // what goreleaser stamps when git could not tell it
		v.Revision = commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if m := bi.Main.Version; m != "" && m != "(devel)" {
		v.Module = m
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// Short is the version recorded in results: the stamped version, else the module version,
// else the commit ("dev+" and 12 hex digits, "-dirty" when modified), else "dev".
func (v Info) Short() string {
	switch {
	case v.Stamped != "":
		return v.Stamped
	case v.Module != "":
		return v.Module
	case v.Revision != "":
		return "dev+" + v.shortRevision()
	}
	return "dev"
}

func (v Info) shortRevision() string {
	r := v.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if v.Modified {
		r += "-dirty"
	}
	return r
}

// Long is what `kalab version` prints: the version, the commit and when it was made, the Go
// release, and what to do when nothing is known.
func (v Info) Long() string {
	s := "kalab " + v.Short()
	if v.Revision != "" {
		s += "\ncommit " + v.Revision
		if v.Modified {
			s += " (modified)"
		}
		if v.Time != "" {
			s += ", " + v.Time
		}
	}
	s += "\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if v.Module == "" && v.Revision == "" && v.Stamped == "" {
		s += "(no module version or commit recorded: build with `go build` or `go install` in a git checkout, without -buildvcs=false)\n"
	}
	return s
}

// Ref is the kalab a workflow this binary writes should build: its release tag, else its
// commit, so the workflow runs the kalab that was tried; main only when the binary does not
// know its origin (built from a tree with changes, or without version control information).
func (v Info) Ref() string {
	switch {
	case strings.HasPrefix(v.Stamped, "v"):
		return v.Stamped
	case v.Revision != "" && !v.Modified:
		return v.Revision
	}
	return "main"
}
