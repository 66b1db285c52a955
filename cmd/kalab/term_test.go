package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// /dev/null is a character device but no terminal: output redirected there is plain.
func TestDevNullIsNoTerminal(t *testing.T) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("isTerminal(/dev/null) = true")
	}
	if canDrawBars(f) {
		t.Error("canDrawBars(/dev/null) = true")
	}
}

func TestColorConventions(t *testing.T) {
	for _, c := range []struct {
		noColor, term string
		want          bool
	}{
		{"", "xterm-256color", true},
		{"1", "xterm-256color", false},
		{"", "dumb", false},
	} {
		t.Setenv("NO_COLOR", c.noColor)
		t.Setenv("TERM", c.term)
		if got := colorAllowed(); got != c.want {
			t.Errorf("NO_COLOR=%q TERM=%q: colorAllowed() = %v, want %v", c.noColor, c.term, got, c.want)
		}
	}
}

// While progress bars are drawn on a terminal, a log line goes through them (mpb prints it
// above the bars), so no redraw can overwrite it; a log that does not go to a terminal
// keeps its own output.
func TestLogLinesGoThroughTheBars(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var out, stderr bytes.Buffer
		b := newBars(&out)
		run := &scenario.Run{Scenario: "s", Variant: "v"}
		b.RunStarted(run, 2)
		sink := &logSink{w: &stderr, tty: tty}
		sink.route(b.p)
		if _, err := sink.Write([]byte("12:00:00 INF run ended scenario=s\n")); err != nil {
			t.Fatal(err)
		}
		sink.route(nil)
		b.RunEnded(run, nil)
		b.Wait()
		viaBars := strings.Contains(out.String(), "run ended")
		direct := strings.Contains(stderr.String(), "run ended")
		if tty && (!viaBars || direct) {
			t.Errorf("log on a terminal: through the bars %v, direct %v; want only through the bars\nbars output: %q", viaBars, direct, out.String())
		}
		if !tty && (viaBars || !direct) {
			t.Errorf("log not on a terminal: through the bars %v, direct %v; want only direct", viaBars, direct)
		}
	}
}
