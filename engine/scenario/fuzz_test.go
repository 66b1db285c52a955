package scenario

import (
	"math"
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
	// Non-finite numbers and durations that overflow, alone or once scaled.
	for _, src := range []string{
		"name: a\nload: {requests: 5, rate: .nan}\n",
		"name: a\ntime_scale: .inf\nload: {requests: 5}\n",
		"name: a\nload: {requests: 5, burst: 1, pause: 1s..-.inf}\n",
		"name: a\nmatrix: {load.rate: [1, -.Inf]}\n",
		"name: a\nserver: {idle_timeout: 2562048h}\n",
		"name: a\ntime_scale: 100\nserver: {idle_timeout: 100000h}\n",
		"name: a\nvariants: [{name: v, time_scale: 2}]\nclient: {timeout: 1500000h}\n",
		"name: a\nserver: {keepalive_hint: 9223372036854775807ns}\ntime_scale: 1.5\n",
		"name: a\ntime_scale: 100\nmiddlebox: {idle_timeout: 100000h}\n",
	} {
		f.Add([]byte(src))
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
		if len(ds) > 0 || s == nil {
			return
		}
		// A scenario that loads can run: every number is finite and every duration fits a
		// time.Duration once its time scale is applied.
		for _, r := range s.Runs {
			st := r.Settings
			if math.IsNaN(st.TimeScale) || math.IsInf(st.TimeScale, 0) || math.IsNaN(st.Load.Rate) || math.IsInf(st.Load.Rate, 0) {
				t.Fatalf("run %s loaded a non-finite number: %+v", r.Variant, st)
			}
			for _, d := range durationFields(st) {
				if d.d < 0 || float64(d.d)*st.TimeScale >= float64(maxDuration) {
					t.Fatalf("run %s: %s = %v overflows at time scale %g", r.Variant, d.path, d.d, st.TimeScale)
				}
			}
		}
	})
}
