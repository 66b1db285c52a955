package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kalab-dev/kalab/engine/runner"
)

// cancelOnRun cancels the sweep's context when the first run ends, as a SIGINT would
// between two runs.
type cancelOnRun struct{ cancel context.CancelFunc }

func (c cancelOnRun) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"run ended"`)) && bytes.Contains(p, []byte(`"pass":`)) { // the sweep's line, not the runner's
		c.cancel()
	}
	return len(p), nil
}

// TestInterruptedSweepWritesClosingRecord: a sweep stopped after its first run still ends
// sweep.jsonl with its closing record, as docs/sweep.md says: the sample that ran, then the
// "sweep" line marked interrupted, whose sentence claims nothing of the range. A later
// --baseline refuses that record.
func TestInterruptedSweepWritesClosingRecord(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "reuse.yaml")
	if err := os.WriteFile(file, []byte("name: reuse\nnetwork: {rtt: 0ms}\nserver: {idle_timeout: 10s}\nload: {requests: 4, burst: 1, pause: 100ms}\nexpect: [\"connections == 1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := &Options{File: file, Param: "client.idle_timeout", Range: "10ms..300ms", Seeds: 1, Budget: 50, Tries: 1, Grid: 5,
		Out: dir, KalabVersion: "test", Host: runner.TestHost(t), Log: zerolog.New(cancelOnRun{cancel})}
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	tg, err := o.Open()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Invoke(ctx, o, tg, io.Discard)
	if !errors.Is(err, context.Canceled) || out == nil {
		t.Fatalf("Invoke: %v, %v; want the outcome and context.Canceled", out, err)
	}
	f, err := os.Open(filepath.Join(out.Dir, "sweep.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kinds []string
	var last map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, line["record"].(string))
		last = line
	}
	if got := strings.Join(kinds, " "); got != "sample sweep" {
		t.Fatalf("sweep.jsonl records %q; want one sample, then the closing sweep record", got)
	}
	if last["interrupted"] != true || last["runs"] != 1.0 {
		t.Errorf("closing record interrupted %v, runs %v; want true, 1", last["interrupted"], last["runs"])
	}
	want := "client.idle_timeout: no boundary found among the 1 point judged, and nothing is said of the whole range 10ms..300ms: " +
		"4 of the 5 grid points have no verdict (82.5ms, 155ms, 227.5ms, 300ms): the sweep was interrupted"
	if s := last["sentences"].([]any); len(s) != 1 || s[0] != want {
		t.Errorf("sentences %q; want %q", s, want)
	}
	if _, err := LoadRecord(out.Dir); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("LoadRecord of an interrupted sweep: %v; want it refused as a baseline", err)
	}
}
