package report

import (
	"fmt"
	"strings"
)

// unverifiedMark is in every note of a program version outside its preset's verified set,
// so the summary, JUnit and the HTML report can show those notes beside the verdict.
const unverifiedMark = " is not among the versions the "

// UnverifiedVersionNote is the note of a run whose real program, the one preset models,
// ran at a version the preset was not verified against; verified lists those it was
// ("6.24.1 on 2026-12-01"), "" when none.
func UnverifiedVersionNote(program, version, preset, verified string) string {
	if verified == "" {
		verified = "none"
	}
	return fmt.Sprintf("%s %s%s%s preset was verified against (%s): this run says what %s %s does, the preset may not",
		program, version, unverifiedMark, preset, verified, program, version)
}

// VersionNotes are the run's notes that say its real program ran at a version its preset
// was not verified against.
func (r *Run) VersionNotes() []string {
	var out []string
	for _, n := range r.Notes {
		if strings.Contains(n, unverifiedMark) {
			out = append(out, n)
		}
	}
	return out
}
