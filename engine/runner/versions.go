package runner

import (
	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// serverPresets maps a real server's kind to the server preset that models it.
var serverPresets = map[string]string{"nginx": "nginx", "node": "node"}

// Modelled is a run's real program, client or server, that a preset models.
type Modelled struct {
	Preset  *scenario.Preset
	Program string // its name in the version line: undici for node-fetch
	Version string // its own version, read from the line; "" when the line names none
}

// ModelledPrograms lists the run's real programs that a preset models: a bundled adapter
// (its Preset) and a real nginx or Node server (the server preset of the same name).
func ModelledPrograms(rec *report.Run) []Modelled {
	var out []Modelled
	if c := rec.Client; c != nil && c.Adapter != "" {
		if a, ok := execclient.Lookup(c.Adapter); ok {
			if p, ok := scenario.ClientPresets[a.Preset]; ok {
				out = append(out, Modelled{p, a.Program, scenario.VersionOf(a.Program, c.Version)})
			}
		}
	}
	if s := rec.Server; s != nil {
		if p, ok := scenario.ServerPresets[serverPresets[s.Kind]]; ok {
			out = append(out, Modelled{p, s.Kind, scenario.VersionOf(s.Kind, s.Version)})
		}
	}
	return out
}

// versionNotes are the notes of a run whose real program is one a preset models, at a
// version that preset was not verified against: what the run measured is that version's
// behaviour, which the preset may not share.
func versionNotes(rec *report.Run) []string {
	var out []string
	for _, m := range ModelledPrograms(rec) {
		if m.Version != "" && !m.Preset.Verifies(m.Program, m.Version) {
			out = append(out, report.UnverifiedVersionNote(m.Program, m.Version, m.Preset.Name, m.Preset.VersionsOf(m.Program)))
		}
	}
	return out
}
