package runner

import (
	"strings"

	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// serverPresets maps a real server's kind to the server preset that models it, and
// balancerPresets a real balancer's program to the balancer preset that does.
var (
	serverPresets   = map[string]string{"nginx": "nginx", "node": "node"}
	balancerPresets = map[string]string{"nginx": "nginx-proxy", "haproxy": "haproxy"}
)

// Modelled is a run's real program, client or server, that a preset models.
type Modelled struct {
	Preset  *scenario.Preset
	Program string // its name in the version line: undici for node-fetch
	Version string // its own version, read from the line; "" when the line names none
}

// ModelledPrograms lists the run's real programs that a preset models: a bundled adapter
// (its Preset), a real nginx or Node server (the server preset of the same name), and a
// real nginx or HAProxy balancer (nginx-proxy, haproxy). A distribution's suffix on a
// version (HAProxy's 2.6.12-1+deb12u4) is left off: the release is the program's.
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
	for _, h := range rec.Hops {
		if p, ok := scenario.BalancerPresets[balancerPresets[h.Name]]; ok && h.Role == "balancer" && h.Program != "" {
			release, _, _ := strings.Cut(h.Version, "-")
			out = append(out, Modelled{p, h.Name, scenario.VersionOf(h.Name, release)})
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
