package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A preset that says it was verified names a truth file that exists, loads, and runs that
// preset beside a real program (exec), for each version it lists; every preset with a real
// adapter says it was verified or has a reason not to (curl-multi's stale race cannot be
// paused in one curl). Verified, the words, is written from those versions.
func TestVerifiedPresetsNameTheirTruthFile(t *testing.T) {
	t.Parallel()
	ref := regexp.MustCompile(`^scenarios/truth/[a-z0-9.-]+\.yaml$`)
	date := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	for _, reg := range []map[string]*Preset{ServerPresets, ClientPresets, BalancerPresets, MiddleboxPresets} {
		for name, p := range reg {
			if (p.Verified == "") != (len(p.Checked) == 0) {
				t.Errorf("%s: Verified %q, yet %d versions checked", name, p.Verified, len(p.Checked))
			}
			for _, c := range p.Checked {
				if !ref.MatchString(c.By) || !date.MatchString(c.On) || c.Program == "" || c.Version == "" {
					t.Errorf("%s: %+v: want a program, a version, a date YYYY-MM-DD and a file scenarios/truth/NAME.yaml", name, c)
					continue
				}
				if !strings.Contains(p.Verified, c.Program+" "+c.Version+c.What+" on "+c.On+" by "+c.By) {
					t.Errorf("%s: Verified %q does not say %s %s on %s by %s", name, p.Verified, c.Program, c.Version, c.On, c.By)
				}
				verifiedBy(t, name, c.By)
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
