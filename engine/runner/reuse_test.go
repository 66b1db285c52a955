package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// shortVariant rewrites a bundled scenario file for one client preset, with its load
// capped at most requests (concurrency with it) and without its checks: what is under test
// is the reuse invariants every run checks, not the file's findings.
func shortVariant(t *testing.T, file, preset string, most int) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "scenarios", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	// The clock too: the invariants are the pool's logic, which the virtual clock runs
	// exactly and in a fraction of the wall time (09 chose the real clock for what
	// 5,000 connections cost a core, which no invariant reads).
	for _, k := range []string{"expect", "compare", "baseline", "clock"} {
		delete(doc, k)
	}
	doc["name"] = fmt.Sprintf("%s-%s", doc["name"], preset)
	doc["client"] = map[string]any{"preset": preset, "timeout": "30s"}
	ld := doc["load"].(map[string]any)
	for _, k := range []string{"requests", "concurrency", "burst"} {
		if n, ok := ld[k].(int); ok && n > most {
			ld[k] = most
		}
	}
	if vs, ok := doc["variants"].([]any); ok {
		for _, v := range vs {
			delete(v.(map[string]any), "expect")
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The reuse invariants (a request is reused only when its connection carried an earlier
// one) hold on the files that stress reuse hardest, for every client preset: 08's pool
// smaller than the concurrency, 09's burst over HTTP/1.1 and HTTP/2, 11's HTTP/2 cold
// start. A broken invariant ends a run as an error.
func TestReuseInvariantsPerPreset(t *testing.T) {
	t.Parallel()
	var presets []string
	for name := range scenario.ClientPresets {
		presets = append(presets, name)
	}
	sort.Strings(presets)
	// 100 requests at once still outnumber any preset's pool by far.
	files := map[string]int{"08-pool-thrash.yaml": 100, "09-http2-burst.yaml": 100, "11-http2-cold-start.yaml": 300}
	var srcs []string
	for file, most := range files {
		for _, p := range presets {
			srcs = append(srcs, shortVariant(t, file, p, most))
		}
	}
	dir := t.TempDir()
	var paths []string
	for i, s := range srcs {
		f := filepath.Join(dir, fmt.Sprintf("s%02d.yaml", i))
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, f)
	}
	p, err := scenario.LoadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	o := virtualOpts(t)
	o.SkipRequests = true
	out, err := Execute(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	reused := 0.0
	for _, r := range out.Runs {
		if r.Timing != nil && r.Timing.Noisy {
			continue // no verdict on a run the machine could not time; the others still check
		}
		if r.Status != report.StatusPass || strings.Contains(r.Error, "reuse") {
			t.Errorf("%s/%s: %s %s", r.Scenario, r.Variant, r.Status, r.Error)
		}
		reused += r.Metrics.ReusedRequests
	}
	if len(out.Runs) < 6*len(presets) || reused == 0 {
		t.Fatalf("%d runs, %v reused requests: the invariants were not exercised", len(out.Runs), reused)
	}
}
