package runner

import (
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// serverPresets maps a real server's kind to the server preset that models it.
var serverPresets = map[string]string{"nginx": "nginx", "node": "node"}

// versionNotes are the notes of a run whose real program, client or server, is one a
// preset models, at a version that preset was not verified against: what the run measured
// is that version's behaviour, which the preset may not share.
func versionNotes(rec *report.Run) []string {
	var out []string
	if c := rec.Client; c != nil && c.Adapter != "" {
		if a, ok := execclient.Lookup(c.Adapter); ok && a.Preset != "" {
			out = append(out, versionNote(scenario.ClientPresets[a.Preset], a.Program, c.Version)...)
		}
	}
	if s := rec.Server; s != nil {
		if name, ok := serverPresets[s.Kind]; ok {
			out = append(out, versionNote(scenario.ServerPresets[name], s.Kind, s.Version)...)
		}
	}
	return out
}

// versionNote is the note for program's version line against preset p; none when the
// line names no version of it or p was verified against that version.
func versionNote(p *scenario.Preset, program, line string) []string {
	v := scenario.VersionOf(program, line)
	if p == nil || v == "" || p.Verifies(program, v) {
		return nil
	}
	return []string{report.UnverifiedVersionNote(program, v, p.Name, p.VersionsOf(program))}
}
