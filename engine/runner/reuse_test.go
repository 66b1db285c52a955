package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/client"
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
	for _, k := range []string{"expect", "compare", "baseline"} {
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
	files := map[string]int{"08-pool-thrash.yaml": 100, "09-http2-burst.yaml": 300, "11-http2-cold-start.yaml": 300}
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
	o := opts(t)
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

// Each invariant fires on the history that breaks it, and only then.
func TestReuseBookViolations(t *testing.T) {
	t.Parallel()
	ev := func(seq int, conn uint64, reused bool, connect time.Duration) client.Event {
		return client.Event{Seq: seq, ConnID: conn, Reused: reused, Connect: connect, Status: 200}
	}
	// Three requests on two connections: one reused, as the histories allow.
	good := []client.Event{ev(0, 1, false, time.Millisecond), ev(1, 1, true, 0), ev(2, 2, false, time.Millisecond)}
	server := []report.Conn{{Side: "server", ID: 7, ClientConn: 1, Requests: 2}, {Side: "server", ID: 8, ClientConn: 2, Requests: 1}}
	facts := reuseFacts{requests: 3, reused: 1, connections: 2, serverConns: server, serverConnections: 2, proxyConnections: 2, perConn: true}
	for _, tc := range []struct {
		name   string
		events []client.Event
		edit   func(f *reuseFacts)
		want   string
	}{
		{"consistent", good, func(*reuseFacts) {}, ""},
		{"library flag", good, func(f *reuseFacts) { f.reused = 2 }, "allow at most 1"},
		{"phase on reuse", []client.Event{ev(0, 1, false, 0), ev(1, 1, true, time.Millisecond), ev(2, 2, false, 0)}, func(*reuseFacts) {}, "connect or TLS phase"},
		{"more than opened", good, func(f *reuseFacts) { f.connections = 1 }, "more than the 1 the client opened"},
		{"server counted fewer", good, func(f *reuseFacts) {
			f.serverConns = []report.Conn{{Side: "server", ID: 7, ClientConn: 1, Requests: 1}, server[1]}
		}, "more requests at the client"},
		{"link saw fewer", good, func(f *reuseFacts) { f.proxyConnections = 1 }, "the link in front of it 1"},
	} {
		b := newReuseBook()
		for _, e := range tc.events {
			b.add(e)
		}
		f := facts
		tc.edit(&f)
		got := strings.Join(b.violations(f), "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want one saying %q", tc.name, got, tc.want)
		}
	}
}
