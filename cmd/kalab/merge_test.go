package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/cmd/kalab/internal/shard"
	"github.com/kalab-dev/kalab/engine/compile"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/runner"
	"github.com/kalab-dev/kalab/engine/scenario"
)

const shardSet = "testdata/shards"

// kalab runs the CLI in-process and returns its exit code and output.
func kalab(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	args = append(args, "--log-level", "warn")
	if len(args) > 0 && args[0] == "run" {
		// Sharding must not change verdicts; the machine's timing is not what is tested
		// here, so lateness is recorded but judges nothing.
		args = append(args, "--lag-tolerance", "0")
	}
	code := Main(args, &out, &out)
	return code, out.String()
}

// outcomeLines reduces results to what sharding must not change: each run's name, status
// and checks, and each scenario's compare checks.
func outcomeLines(t *testing.T, dir string) []string {
	t.Helper()
	res, err := report.ReadFile(filepath.Join(dir, "latest", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	seen := map[string]bool{}
	for _, r := range res.Runs {
		k := r.Scenario + "/" + r.Variant
		if seen[k] {
			t.Errorf("%s: run %s twice", dir, k)
		}
		seen[k] = true
		for _, c := range r.Checks {
			lines = append(lines, fmt.Sprintf("run %s %s: %s %s verdict=%s", k, r.Status, c.Kind, c.Expr, c.Verdict()))
		}
		lines = append(lines, fmt.Sprintf("run %s %s", k, r.Status))
	}
	for _, s := range res.Scenarios {
		for _, c := range s.Checks {
			lines = append(lines, fmt.Sprintf("scenario %s %s: %s verdict=%s", s.Scenario, s.Status, c.Expr, c.Verdict()))
		}
		lines = append(lines, fmt.Sprintf("scenario %s %s runs=%d", s.Scenario, s.Status, s.Runs))
	}
	slices.Sort(lines)
	return lines
}

// TestMergeEqualsUnsharded runs a small scenario set whole and in 3 shards on real sockets,
// merges the shards and compares: the same runs once each, the same statuses and checks
// (the compare checks of a file split across shards included), the same exit code; then a
// missing shard, a shard given twice, mixed kalab versions and another scenario set.
func TestMergeEqualsUnsharded(t *testing.T) {
	tmp := t.TempDir()
	whole := filepath.Join(tmp, "whole")
	wantCode, out := kalab(t, "run", "--out", whole, shardSet)
	if wantCode != exitCheckFailed { // small-fails fails on purpose
		t.Fatalf("unsharded run: exit %d, want 1\n%s", wantCode, out)
	}
	want := outcomeLines(t, whole)

	// Merge 1, 3 and 7 shards of the set; keep the 3 for the cases below.
	const n = 3
	var shards string
	for _, count := range []int{1, n, 7} {
		dir := filepath.Join(tmp, fmt.Sprintf("shards-of-%d", count))
		split := false
		for i := 1; i <= count; i++ {
			code, out := kalab(t, "run", "--shard", fmt.Sprintf("%d/%d", i, count), "--out", filepath.Join(dir, fmt.Sprint(i)), shardSet)
			if code != exitOK && code != exitCheckFailed {
				t.Fatalf("shard %d/%d: exit %d\n%s", i, count, code, out)
			}
			m, err := shard.ReadManifest(filepath.Join(dir, fmt.Sprint(i), "latest"))
			if err != nil {
				t.Fatal(err)
			}
			split = split || len(m.SplitFiles) > 0
		}
		// Each shard's invocation record names its shard and the whole plan's hash.
		hashes := map[string]bool{}
		for i := 1; i <= count; i++ {
			res, err := report.ReadFile(filepath.Join(dir, fmt.Sprint(i), "latest", "results.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if inv := res.Invocation; inv == nil || inv.Shard != fmt.Sprintf("%d/%d", i, count) || !inv.Completed {
				t.Errorf("shard %d/%d: invocation record %+v", i, count, res.Invocation)
			} else {
				hashes[inv.PlanHash] = true
			}
		}
		if len(hashes) != 1 {
			t.Errorf("%d shards: %d different plan hashes in their invocation records", count, len(hashes))
		}
		if count == n && !split {
			t.Errorf("no file was split across the %d shards: the merge-time compare path is not exercised", n)
		}
		merged := filepath.Join(tmp, fmt.Sprintf("merged-%d", count))
		code, out := kalab(t, "merge", dir, "--out", merged)
		if code != wantCode {
			t.Errorf("merge of %d: exit %d, want %d as unsharded\n%s", count, code, wantCode, out)
		}
		if got := outcomeLines(t, merged); !slices.Equal(got, want) {
			t.Errorf("merge of %d: the outcome differs from the unsharded one:\n got %s\nwant %s", count, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
		if err := report.ValidateRunDir(filepath.Join(merged, "latest")); err != nil {
			t.Errorf("merge of %d: the results do not match the schema: %v", count, err)
		}
		res, _ := report.ReadFile(filepath.Join(merged, "latest", "results.jsonl"))
		if inv := res.Invocation; inv == nil || !inv.Completed || inv.Planned != 7 || inv.Recorded != 7 || !hashes[inv.PlanHash] {
			t.Errorf("merge of %d: invocation record %+v, want completed, 7 of 7 runs, the shards' plan hash", count, res.Invocation)
		}
		for _, r := range res.Runs {
			if _, err := os.Stat(filepath.Join(merged, "latest", r.RequestsFile)); err != nil {
				t.Errorf("merge of %d: request file of %s/%s: %v", count, r.Scenario, r.Variant, err)
			}
		}
		if count == n {
			shards = dir
		}
	}
	merged := filepath.Join(tmp, "merged")

	// Gated like a single run: the unsharded results as baseline, JUnit written.
	junit := filepath.Join(tmp, "junit.xml")
	code, out := kalab(t, "merge", shards, "--out", merged, "--baseline", filepath.Join(whole, "latest"), "--fail-missing", "--junit", junit)
	if code != wantCode {
		t.Errorf("merge --baseline: exit %d, want %d\n%s", code, wantCode, out)
	}
	if _, err := os.Stat(junit); err != nil {
		t.Errorf("merge --junit: %v", err)
	}
	html := filepath.Join(tmp, "report.html")
	if code, out := kalab(t, "merge", shards, "--out", merged, "--html", html); code != wantCode {
		t.Errorf("merge --html: exit %d, want %d\n%s", code, wantCode, out)
	} else if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("small-reuse")) {
		t.Errorf("merge --html: no report naming the merged scenarios (%v)", err)
	}

	// Missing baseline runs: a shard counts only its own part as missing, the merge the
	// whole plan's paths, so a run of a scenario file deleted from the set is missing once,
	// in the merge.
	wholeRes, err := report.ReadFile(filepath.Join(whole, "latest", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	gone := wholeRes.Runs[0]
	gone.Scenario, gone.File = "gone", filepath.Join(shardSet, "gone.yaml")
	withGone := filepath.Join(tmp, "with-gone")
	writeResults(t, withGone, append(wholeRes.Runs, gone), nil, nil)
	for i := 1; i <= n; i++ {
		_, out := kalab(t, "run", "--shard", fmt.Sprintf("%d/%d", i, n), "--out", filepath.Join(tmp, "gated"), "--no-requests",
			"--baseline", withGone, "--fail-missing", shardSet)
		if !strings.Contains(out, " 0 missing") {
			t.Errorf("shard %d/%d --baseline reports runs missing that are not its part:\n%s", i, n, out)
		}
	}
	_, out = kalab(t, "merge", shards, "--out", merged, "--baseline", withGone, "--fail-missing")
	if !strings.Contains(out, " 1 missing") || !strings.Contains(out, "gone") {
		t.Errorf("merge --baseline: the run of a deleted file is not reported missing:\n%s", out)
	}

	// A missing shard: named with its runs; exit 3 unless --allow-partial.
	var some []string
	for i := 1; i <= n; i++ {
		if i != 2 {
			some = append(some, filepath.Join(shards, fmt.Sprint(i)))
		}
	}
	m2, _ := shard.ReadManifest(filepath.Join(shards, "2", "latest"))
	code, out = kalab(t, append(append([]string{"merge"}, some...), "--out", filepath.Join(tmp, "partial"))...)
	if len(m2.Mine()) > 0 {
		if code != exitEngine || !strings.Contains(out, "shard 2/3 is missing") {
			t.Errorf("merge without shard 2: exit %d, want 3 and shard 2/3 named\n%s", code, out)
		}
		if res, err := report.ReadFile(filepath.Join(tmp, "partial", "latest", "results.jsonl")); err != nil || res.Invocation == nil || res.Invocation.Completed {
			t.Errorf("merge without shard 2: the merged invocation record says completed (%v)", err)
		}
		for _, r := range m2.Mine() {
			if !strings.Contains(out, r.Scenario+"/"+r.Variant) {
				t.Errorf("merge without shard 2 does not name its run %s/%s\n%s", r.Scenario, r.Variant, out)
			}
		}
		code, out = kalab(t, append(append([]string{"merge", "--allow-partial"}, some...), "--out", filepath.Join(tmp, "partial"))...)
		if code == exitEngine || code == exitInvalid {
			t.Errorf("merge --allow-partial without shard 2: exit %d\n%s", code, out)
		}
	} else {
		t.Errorf("shard 2/3 has no runs; the missing-shard case is not exercised")
	}

	// The same directory named twice, or found again through a copy of it, is one shard.
	copyDir(t, filepath.Join(shards, "1", "latest"), filepath.Join(tmp, "copy", "run"))
	if code, out := kalab(t, "merge", shards, filepath.Join(shards, "1"), filepath.Join(tmp, "copy"), "--out", filepath.Join(tmp, "same")); code != wantCode {
		t.Errorf("one shard named twice: exit %d, want %d\n%s", code, wantCode, out)
	}

	// The same shard run twice: two invocations of one part overlap.
	again := filepath.Join(tmp, "again")
	kalab(t, "run", "--shard", "1/3", "--out", again, shardSet)
	if code, out := kalab(t, "merge", shards, again, "--out", filepath.Join(tmp, "dup")); code != exitInvalid || !strings.Contains(out, "shard 1/3 twice") {
		t.Errorf("shard given twice: exit %d, want 2\n%s", code, out)
	}

	// Mixed kalab versions.
	other := filepath.Join(tmp, "other")
	code, out = kalab(t, "run", "--shard", "2/3", "--out", other, shardSet)
	if code != exitOK && code != exitCheckFailed {
		t.Fatalf("shard 2/3 again: exit %d\n%s", code, out)
	}
	mp := filepath.Join(other, "latest", shard.ManifestFile)
	b, _ := os.ReadFile(mp)
	if err := os.WriteFile(mp, bytes.Replace(b, []byte(`"kalab_version": "dev"`), []byte(`"kalab_version": "v9.9.9"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := kalab(t, append(append([]string{"merge"}, some...), other, "--out", filepath.Join(tmp, "mixed"))...); code != exitInvalid || !strings.Contains(out, "v9.9.9") {
		t.Errorf("mixed kalab versions: exit %d, want 2\n%s", code, out)
	}

	// Another scenario set: shard 2 of a plan without c-fails.yaml.
	fewer := filepath.Join(tmp, "fewer")
	kalab(t, "run", "--shard", "2/3", "--out", fewer, filepath.Join(shardSet, "a-reuse.yaml"), filepath.Join(shardSet, "b-direct.yaml"))
	if code, out := kalab(t, append(append([]string{"merge"}, some...), fewer, "--out", filepath.Join(tmp, "fewer-merged"))...); code != exitInvalid || !strings.Contains(out, "different scenario sets") {
		t.Errorf("different scenario sets: exit %d, want 2\n%s", code, out)
	}
}

// copyDir copies a directory tree of regular files.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	from, err := filepath.EvalSymlinks(from)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMergeBundledSuite is the acceptance check on the whole bundled suite without running
// it: the records of a real unsharded run (the committed baseline) are dealt into 1, 3 and 7
// shard directories exactly as kalab run --shard would split the suite, and merged. The
// merged runs and their checks, and the compare checks re-evaluated at merge time (for the
// files split across shards too), must equal the unsharded run's; each run must appear
// once; and leaving a shard out must name it.
func TestMergeBundledSuite(t *testing.T) {
	files, err := scenario.FindFiles([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	base, err := report.ReadFile("../../results/baseline.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// The unsharded outcome: the baseline's runs, and each file's compare checks evaluated
	// over all its runs in one place as kalab run does (the committed baseline may predate
	// an edit of a compare expression, so its own scenario records are not used).
	var scs []report.Scenario
	for _, sc := range plan.Scenarios {
		byVariant := map[string]*report.Run{}
		for i := range base.Runs {
			if base.Runs[i].Scenario == sc.Name {
				byVariant[base.Runs[i].Variant] = &base.Runs[i]
			}
		}
		srec := runner.CompareScenario(sc, byVariant, "dev", "whole")
		srec.Record, srec.RecordVersion = "scenario", report.RecordVersion
		scs = append(scs, *srec)
	}
	whole := t.TempDir()
	writeResults(t, filepath.Join(whole, "run"), base.Runs, scs, nil)
	if err := os.Symlink("run", filepath.Join(whole, "latest")); err != nil {
		t.Fatal(err)
	}
	want := outcomeLines(t, whole)
	opt := runner.Options{}
	weight := func(sc *scenario.Scenario, r *scenario.Run) time.Duration {
		return compile.One(sc, r, opt.Compile()).Expected
	}
	for _, n := range []int{1, 3, 7} {
		split := shard.Plan(plan, n, weight)
		dir := t.TempDir()
		for i := 1; i <= n; i++ {
			m := shard.NewManifest(split, i)
			m.KalabVersion, m.Paths, m.Files, m.Weights = "dev", []string{"../../scenarios"}, files, "plan"
			m.PlanHash = shard.PlanHash(plan, shard.Overrides{})
			m.RunID = fmt.Sprintf("shard-%d", i)
			var runs []report.Run
			for _, r := range base.Runs {
				for _, a := range m.Mine() {
					if a.Scenario == r.Scenario && a.Variant == r.Variant {
						runs = append(runs, r)
					}
				}
			}
			writeResults(t, filepath.Join(dir, m.RunID), runs, nil, m)
		}
		merged := filepath.Join(t.TempDir(), "merged")
		code, out := kalab(t, "merge", dir, "--out", merged)
		if code != exitOK {
			t.Errorf("%d shards: merge exit %d\n%s", n, code, out)
		}
		if got := outcomeLines(t, merged); !slices.Equal(got, want) {
			t.Errorf("%d shards: merged outcome differs from the unsharded one:\n got %s\nwant %s", n, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
		t.Logf("%d shards: split files %v, spread %.1f%%", n, split.SplitFiles, 100*split.Spread())
		if n == 3 {
			// Shard 1 interrupted before its last run, and one of its runs interrupted.
			m, _ := shard.ReadManifest(filepath.Join(dir, "shard-1"))
			res, _ := report.ReadFile(filepath.Join(dir, "shard-1", "results.jsonl"))
			runs := res.Runs[:len(res.Runs)-1]
			runs[0].Status = report.StatusInterrupted
			writeResults(t, filepath.Join(dir, "shard-1"), runs, nil, m)
			code, out := kalab(t, "merge", dir, "--out", merged)
			last, first := res.Runs[len(res.Runs)-1], res.Runs[0]
			if code != exitEngine || !strings.Contains(out, "shard 1/3") || !strings.Contains(out, "2 of its runs not recorded or interrupted") ||
				!strings.Contains(out, last.Scenario+"/"+last.Variant) || !strings.Contains(out, first.Scenario+"/"+first.Variant) {
				t.Errorf("shard 1/3 incomplete: exit %d, want 3 naming its 2 runs\n%s", code, out)
			}
		}
		if n > 1 {
			os.RemoveAll(filepath.Join(dir, "shard-2"))
			code, out := kalab(t, "merge", dir, "--out", merged)
			if code != exitEngine || !strings.Contains(out, fmt.Sprintf("shard 2/%d is missing", n)) {
				t.Errorf("%d shards without shard 2: exit %d, want 3 naming it\n%s", n, code, out)
			}
		}
	}
}

// writeResults writes a run directory from records, with a shard manifest when m is set.
func writeResults(t *testing.T, dir string, runs []report.Run, scs []report.Scenario, m *shard.Manifest) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range runs {
		r := runs[i]
		// Only the baseline's results.jsonl is committed: none of the files its records
		// reference are here, and merge refuses a reference to a missing file.
		r.RequestsFile, r.ConnectionsFile = "", ""
		if r.Client != nil {
			c := *r.Client
			c.Stderr, r.Client = "", &c
		}
		if r.Server != nil {
			sv := *r.Server
			sv.Logs, r.Server = nil, &sv
		}
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range scs {
		if err := enc.Encode(&scs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if m != nil {
		if err := m.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMergeCarriesReferencedFiles: every file a merged run record references (request,
// connection, real client and real server files) opens in the merged directory. The
// references are read from the raw JSON, apart from the code that copies them.
func TestMergeCarriesReferencedFiles(t *testing.T) {
	for _, prog := range []string{"curl", "nginx"} {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI installs it in .ci/preamble)", prog)
			}
			t.Skipf("%s is not installed", prog)
		}
	}
	tmp := t.TempDir()
	const set = "testdata/merge-refs"
	for i := 1; i <= 2; i++ {
		if code, out := kalab(t, "run", "--allow-exec=bundled", "--shard", fmt.Sprintf("%d/2", i), "--out", filepath.Join(tmp, "shards", fmt.Sprint(i)), set); code != exitOK {
			t.Fatalf("shard %d/2: exit %d\n%s", i, code, out)
		}
	}
	merged := filepath.Join(tmp, "merged")
	if code, out := kalab(t, "merge", filepath.Join(tmp, "shards"), "--out", merged); code != exitOK {
		t.Fatalf("merge: exit %d\n%s", code, out)
	}
	dir := filepath.Join(merged, "latest")
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec struct {
			Record          string `json:"record"`
			Variant         string `json:"variant"`
			RequestsFile    string `json:"requests_file"`
			ConnectionsFile string `json:"connections_file"`
			Client          *struct {
				Stderr string `json:"stderr"`
			} `json:"client"`
			Server *struct {
				Logs []string `json:"logs"`
			} `json:"server"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		refs := map[string][]string{"requests": {rec.RequestsFile}, "connections": {rec.ConnectionsFile}}
		if rec.Client != nil {
			refs["client"] = []string{rec.Client.Stderr}
		}
		if rec.Server != nil {
			refs["server"] = rec.Server.Logs
		}
		for kind, files := range refs {
			for _, f := range files {
				if f == "" {
					continue
				}
				kinds[kind]++
				fh, err := os.Open(filepath.Join(dir, f))
				if err != nil {
					t.Errorf("run %s references %s (%s), which the merged directory lacks: %v", rec.Variant, f, kind, err)
					continue
				}
				fh.Close()
			}
		}
	}
	for _, kind := range []string{"requests", "connections", "client", "server"} {
		if kinds[kind] == 0 {
			t.Errorf("no merged run references a %s file: the set no longer covers it (%v)", kind, kinds)
		}
	}
}
