package presets

import (
	"fmt"
	"strings"
)

// verifiedText is a preset's checks in words, one "PROGRAM VERSION WHAT on DATE by FILE"
// for each, joined by "; ".
func verifiedText(checks []Check) string {
	parts := make([]string, len(checks))
	for i, c := range checks {
		parts[i] = fmt.Sprintf("%s %s%s on %s by %s", c.Program, c.Version, c.What, c.On, c.By)
	}
	return strings.Join(parts, "; ")
}

// VersionOf finds program's version in a version line as a runtime prints it: the word
// after the program's name ("node 20.20.2 undici 6.24.1": undici's is 6.24.1), the text
// after its name and a slash ("libcurl/7.88.1"), the digits after its name ("go1.26.8"), or
// the whole line when it is a version alone ("1.22.1", "v20.20.2"). When the line names the
// program twice, the last wins: an adapter that ran another release than its runtime's own
// says so after it ("node 20.20.2 undici 6.24.1 ...; fetch from undici 7.30.3": 7.30.3).
// "" when the line does not name the program's version.
func VersionOf(program, line string) string {
	words := strings.Fields(line)
	if len(words) == 1 && isVersion(words[0]) {
		return strings.TrimPrefix(words[0], "v")
	}
	found := ""
	for i, w := range words {
		var v string
		switch {
		case strings.EqualFold(w, program) && i+1 < len(words): // Chromium prints "Chromium 156.0..."
			v = words[i+1]
		case strings.HasPrefix(w, program+"/"):
			v = w[len(program)+1:]
		case strings.HasPrefix(w, program):
			v = w[len(program):]
		}
		v = strings.TrimRight(v, ",;:)")
		if isVersion(v) {
			found = strings.TrimPrefix(v, "v")
		}
	}
	return found
}

// isVersion: a word that starts with a digit, or v and a digit.
func isVersion(w string) bool {
	w = strings.TrimPrefix(w, "v")
	return w != "" && w[0] >= '0' && w[0] <= '9'
}

// Verifies says whether a truth file found the preset in agreement with program at
// version, or at a release of the same major and minor (VerifiedAs).
func (p *Preset) Verifies(program, version string) bool { return p.VerifiedAs(program, version) != "" }

// VerifiedAs says how the preset is verified for program at version: the version itself
// when a truth file checked it, "7.30.x (7.30.3 checked)" when one checked a release of the
// same major and minor (a patch release is taken to behave as its siblings do), "" when
// neither.
func (p *Preset) VerifiedAs(program, version string) string {
	minor, as := majorMinor(version), ""
	for _, c := range p.Checked {
		switch {
		case c.Program != program:
		case c.Version == version:
			return version
		case as == "" && minor != "" && majorMinor(c.Version) == minor:
			as = minor + ".x (" + c.Version + " checked)"
		}
	}
	return as
}

// majorMinor is a release's first two numbers ("7.30" of 7.30.3), "" for a version of
// fewer than three parts.
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "." + parts[1]
}

// VersionsOf lists the versions of program the preset was verified against, each with the
// last date it agreed: "6.24.1 on 2026-12-01"; "" when none was.
func (p *Preset) VersionsOf(program string) string {
	var order []string
	last := map[string]string{}
	for _, c := range p.Checked {
		if c.Program != program {
			continue
		}
		if _, ok := last[c.Version]; !ok {
			order = append(order, c.Version)
		}
		last[c.Version] = max(last[c.Version], c.On)
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = v + " on " + last[v]
	}
	return strings.Join(parts, ", ")
}
