package help

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/scenarios"
)

// truthFile is what `help presets` reads of a bundled truth file: which variants run which
// preset or real program, and the compare expressions between them.
type truthFile struct {
	Client   truthSide      `yaml:"client"`
	Server   truthSide      `yaml:"server"`
	Variants []truthVariant `yaml:"variants"`
	Compare  []string       `yaml:"compare"`
}

type truthSide struct {
	Preset string `yaml:"preset"`
	Exec   any    `yaml:"exec"`
}

type truthVariant struct {
	Name   string    `yaml:"name"`
	Client truthSide `yaml:"client"`
	Server truthSide `yaml:"server"`
}

var (
	truthRef    = regexp.MustCompile(`scenarios/(truth/[a-z0-9-]+\.yaml)`)
	variantRead = regexp.MustCompile(`variant\('([^']+)'\)\.([a-z0-9_.]+)`)
	reachRead   = regexp.MustCompile(`plan_reaches\('([^']+)',\s*'([^']+)'\)`)
)

// expanded rewrites each plan_reaches('a', 'b') of a compare expression as the metrics it
// weighs of both runs, so variantRead finds them.
func expanded(expr string) string {
	return reachRead.ReplaceAllStringFunc(expr, func(call string) string {
		m := reachRead.FindStringSubmatch(call)
		var b strings.Builder
		for _, v := range m[1:] {
			for _, metric := range []string{"errors", "connections", "failed_bursts_mask"} {
				fmt.Fprintf(&b, " variant('%s').%s", v, metric)
			}
		}
		return b.String()
	})
}

// presetCompared lists the metrics the truth files a preset's Verified names compare
// between a variant running the preset and one running a real program, read from the
// files' compare: expressions; empty when Verified names no bundled file or the files
// compare none. server says whether the preset is a server's.
func presetCompared(name, verified string, server bool) []string {
	seen := map[string]bool{}
	for _, m := range truthRef.FindAllStringSubmatch(verified, -1) {
		b, err := scenarios.Files.ReadFile(path.Clean(m[1]))
		if err != nil {
			continue
		}
		var f truthFile
		if yaml.Unmarshal(b, &f) != nil {
			continue
		}
		f.compared(name, server, seen)
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// side returns the preset a variant runs on the client or server side, or real when it
// runs a real program there.
func (f *truthFile) side(v truthVariant, server bool) (preset string, real bool) {
	own, def := v.Client, f.Client
	if server {
		own, def = v.Server, f.Server
	}
	if own.Exec != nil || (own.Preset == "" && def.Exec != nil) {
		return "", true
	}
	if own.Preset != "" {
		return own.Preset, false
	}
	return def.Preset, false
}

// compared adds to seen the metrics of the preset's runs that a compare expression reads
// beside a run of a real program.
func (f *truthFile) compared(name string, server bool, seen map[string]bool) {
	model, real := map[string]bool{}, map[string]bool{}
	for _, v := range f.Variants {
		p, isReal := f.side(v, server)
		model[v.Name], real[v.Name] = p == name, isReal
	}
	for _, expr := range f.Compare {
		reads := variantRead.FindAllStringSubmatch(expanded(expr), -1)
		var withModel, withReal bool
		for _, r := range reads {
			withModel = withModel || model[r[1]]
			withReal = withReal || real[r[1]]
		}
		if !withModel || !withReal {
			continue
		}
		for _, r := range reads {
			if model[r[1]] {
				seen[r[2]] = true
			}
		}
	}
}

// comparedLine is the line `help presets` prints under a preset's verification.
func comparedLine(name, verified string, server bool) string {
	got := presetCompared(name, verified, server)
	if len(got) == 0 {
		return "compared with a real program: nothing (no compare check reads a run of this preset beside a real one)"
	}
	return "compared with the real program: " + strings.Join(got, ", ") + "; not compared: every other metric"
}
