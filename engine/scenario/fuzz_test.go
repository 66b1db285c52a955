package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader: it must return a scenario or diagnostics,
// never panic or hang. Run: go test ./engine/scenario -run ^$ -fuzz FuzzParse -fuzztime 2m
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bad/*.yaml")
	good, _ := filepath.Glob("../../scenarios/*.yaml")
	seeds = append(seeds, good...)
	if len(seeds) == 0 {
		f.Fatal("the fuzz seed corpus is empty")
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ds := Parse("fuzz.yaml", data)
		if s == nil && len(ds) == 0 {
			t.Fatal("no scenario and no diagnostics")
		}
		for _, d := range ds {
			if d.Message == "" {
				t.Fatalf("empty diagnostic: %+v", d)
			}
			if len(d.Message) > 12 && d.Message[:12] == "internal err" {
				t.Fatalf("loader panicked: %s", d.Message)
			}
		}
	})
}
