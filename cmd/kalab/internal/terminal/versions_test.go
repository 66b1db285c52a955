package terminal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/report"
)

// The summary lists, beside the runs' verdicts, each run whose real program ran at a version
// its preset was not verified against, with its note; other notes stay in the record.
func TestSummaryShowsUnverifiedVersions(t *testing.T) {
	t.Parallel()
	note := report.UnverifiedVersionNote("undici", "6.99.0", "undici", "6.24.1 on 2026-12-01")
	other := sampleRun()
	other.Variant, other.Notes = "model", []string{"exec client: ran at time scale 1, not 0.5"}
	real := sampleRun()
	real.Variant, real.Notes = "real", []string{"exec client: ran at time scale 1, not 0.5", note}
	var b bytes.Buffer
	if err := Summary(&b, []*report.Run{other, real}, nil); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	want := "\nversions: 1 of 2 runs ran a program at a version its preset was not verified against\n  s / real: " + note + "\n"
	if !strings.Contains(s, want) {
		t.Errorf("summary lacks %q:\n%s", want, s)
	}
	if strings.Contains(s, "time scale 1, not 0.5") {
		t.Errorf("summary shows a note that is not about a version:\n%s", s)
	}
	if note != "undici 6.99.0 is not among the versions the undici preset was verified against (6.24.1 on 2026-12-01): this run says what undici 6.99.0 does, the preset may not" {
		t.Errorf("note %q", note)
	}
	b.Reset()
	if err := Summary(&b, []*report.Run{other}, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "versions:") {
		t.Errorf("a summary without version notes has a versions line:\n%s", b.String())
	}
}
