package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
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
