package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/completion"
	"github.com/kalab-dev/kalab/cmd/kalab/internal/help"
)

// Shell completion is generated from what the CLI itself says: the commands from the usage
// text, each command's flags from its own --help (pflag's flag usages). A flag added to a
// command appears in the scripts with nothing else to change.

var (
	usageCommand = regexp.MustCompile(`^  kalab ([a-z]+)\b.*?\s{2,}(\S.*)$`)
	usageFlag    = regexp.MustCompile(`^\s+(?:-(\S), )?--([a-z0-9-]+)(\[=true\|false\])?( \S+)?\s{2,}(.*)$`)
)

// flagValues are the values a flag takes, where they are a fixed list.
var flagValues = map[string][]string{
	"log-level":  {"debug", "info", "warn", "error"},
	"log-format": {"auto", "text", "json"},
	"format":     {"text", "json"},
	"allow-exec": {"none", "bundled", "all"},
	"clock":      {"virtual", "real"},
}

// cliCommands reads the commands and their flags from the CLI's own help texts.
func cliCommands() []completion.Command {
	var cmds []completion.Command
	seen := map[string]bool{}
	for _, line := range strings.Split(usage, "\n") {
		m := usageCommand.FindStringSubmatch(line)
		if m == nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		c := completion.Command{Name: m[1], About: strings.TrimSpace(m[2]), Args: commandArgs(m[1]),
			NoFiles: m[1] == "version" || m[1] == "schema"}
		if c.Name != "help" {
			var text strings.Builder
			Main([]string{c.Name, "--help"}, &text, io.Discard)
			for _, l := range strings.Split(text.String(), "\n") {
				if f := usageFlag.FindStringSubmatch(l); f != nil {
					c.Flags = append(c.Flags, completion.Flag{Name: f[2], Short: f[1], About: strings.TrimSpace(f[5]), TakesValue: f[4] != ""})
				}
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	fs, _ := flagSet("completion", "completion bash|zsh|fish\n\n"+
		"Writes a completion script for the shell. bash: source <(kalab completion bash), or save it\n"+
		"in ~/.local/share/bash-completion/completions/kalab. zsh: kalab completion zsh > \"${fpath[1]}/_kalab\".\n"+
		"fish: kalab completion fish > ~/.config/fish/completions/kalab.fish.", stdout, stderr)
	if ok, code := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "kalab completion: name one shell: %s\n", strings.Join(completion.Shells, ", "))
		return exitInvalid
	}
	if !completion.Write(stdout, fs.Arg(0), cliCommands(), flagValues) {
		fmt.Fprintf(stderr, "kalab completion: no completion for %q (shells: %s)\n", fs.Arg(0), strings.Join(completion.Shells, ", "))
		return exitInvalid
	}
	return exitOK
}

// commandArgs are the fixed words a command takes as arguments, where it takes words.
func commandArgs(name string) []string {
	switch name {
	case "help":
		return append(append([]string{}, help.Topics...), cliCommandNames()...)
	case "completion":
		return completion.Shells
	}
	return nil
}

// cliCommandNames is the command names alone (without running each --help).
func cliCommandNames() []string {
	var names []string
	for _, line := range strings.Split(usage, "\n") {
		if m := usageCommand.FindStringSubmatch(line); m != nil && !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}
