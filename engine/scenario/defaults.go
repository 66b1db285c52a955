package scenario

import (
	"fmt"

	"github.com/kalab-dev/kalab/engine/scenario/presets"
)

// Preset is a named starting point that models a real program (engine/scenario/presets).
type Preset = presets.Preset

// The registries a section's preset field names its preset in, by section.
var (
	ServerPresets    = presets.Server
	ClientPresets    = presets.Client
	BalancerPresets  = presets.Balancer
	MiddleboxPresets = presets.Middlebox
)

// PresetNames returns the names in a registry, sorted.
func PresetNames(reg map[string]*Preset) []string { return presets.Names(reg) }

// VersionOf finds program's version in the version line a runtime or server printed ("" when
// the line names none): presets.VersionOf.
func VersionOf(program, line string) string { return presets.VersionOf(program, line) }

var (
	defaults          = builtin[Settings](presets.Defaults)
	balancerDefaults  = builtin[Balancer](presets.BalancerDefaults)
	middleboxDefaults = builtin[Middlebox](presets.MiddleboxDefaults)
)

// builtin decodes built-in defaults; they are part of the program, so a failure is a bug.
func builtin[T any](p *Preset) T {
	var v T
	if err := p.Decode(&v); err != nil {
		panic(fmt.Sprintf("scenario: built-in %s: %v", p.Name, err))
	}
	return v
}

// defaultSettings returns a fresh copy of the defaults (slices and maps not shared).
func defaultSettings() Settings {
	s := defaults
	s.Client.Retry.On = append([]string(nil), defaults.Client.Retry.On...)
	s.Client.Headers = nil
	return s
}
