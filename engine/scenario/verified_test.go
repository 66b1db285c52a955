package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A preset that says it was verified names truth files (one per version it was run
// against), each of which exists, loads, and runs that preset beside a real program
// (exec); every preset with a real adapter says it was verified or has a reason not to
// (curl-multi's stale race cannot be paused in one curl).
func TestVerifiedPresetsNameTheirTruthFile(t *testing.T) {
	t.Parallel()
	ref := regexp.MustCompile(`scenarios/truth/[a-z0-9.-]+\.yaml`)
	for _, reg := range []map[string]*Preset{ServerPresets, ClientPresets} {
		for name, p := range reg {
			if p.Verified == "" {
				continue
			}
			rels := ref.FindAllString(p.Verified, -1)
			if len(rels) == 0 {
				t.Errorf("%s: Verified %q names no scenarios/truth/ file", name, p.Verified)
			}
			for _, rel := range rels {
				verifiedBy(t, name, rel)
			}
		}
	}
}

// verifiedBy checks that the truth file rel (relative to the module) loads and pairs preset
// name with a real program.
func verifiedBy(t *testing.T, name, rel string) {
	t.Helper()
	path := filepath.Join("..", "..", rel)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if !strings.Contains(string(src), "preset: "+name) || !strings.Contains(string(src), "exec: ") {
		t.Errorf("%s: %s does not pair preset %s with a real program", name, rel, name)
	}
	if _, err := LoadFiles([]string{path}); err != nil {
		t.Errorf("%s: %s: %v", name, rel, err)
	}
}
