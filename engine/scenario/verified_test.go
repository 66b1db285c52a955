package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A preset that says it was verified names a truth file that exists, loads, and runs that
// preset beside a real program (exec); every preset with a real adapter says it was
// verified or has a reason not to (curl-multi's stale race cannot be paused in one curl).
func TestVerifiedPresetsNameTheirTruthFile(t *testing.T) {
	t.Parallel()
	ref := regexp.MustCompile(`scenarios/truth/[a-z0-9-]+\.yaml`)
	for _, reg := range []map[string]*Preset{ServerPresets, ClientPresets} {
		for name, p := range reg {
			if p.Verified == "" {
				continue
			}
			rel := ref.FindString(p.Verified)
			if rel == "" {
				t.Errorf("%s: Verified %q names no scenarios/truth/ file", name, p.Verified)
				continue
			}
			path := filepath.Join("..", "..", rel)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if !strings.Contains(string(src), "preset: "+name) || !strings.Contains(string(src), "exec: ") {
				t.Errorf("%s: %s does not pair preset %s with a real program", name, rel, name)
			}
			if _, err := LoadFiles([]string{path}); err != nil {
				t.Errorf("%s: %s: %v", name, rel, err)
			}
		}
	}
}
