package house

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A recipe step: in file, insert text right after the line anchor (a whole line, found
// once), or right before it (before), or put text in its place (replace).
type step struct {
	file, anchor, text string
	before, replace    bool
}

// The recipes of docs/architecture.md for a client preset, a middlebox preset and a metric,
// as edits to a copy of the module. Each anchor is the declaration the recipe names.
var recipeSteps = []step{
	// A client preset: an entry in Client, its name in client.preset's enum.
	{"engine/scenario/presets/presets.go", "var Client = registry([]Preset{", "\t{Name: \"recipe-agent\", Models: \"a client added by following the recipe\", Source: \"the recipe test\", YAML: \"idle_timeout: 1s\"},", false, false},
	{"schema/scenario.schema.json", `          "enum": ["node-agent", "node-agent-default", "node-global-agent", "undici", "go-default", "python-requests", "curl-loop", "curl-multi", "chromium", "quic-go-http3"]`, `          "enum": ["recipe-agent", "node-agent", "node-agent-default", "node-global-agent", "undici", "go-default", "python-requests", "curl-loop", "curl-multi", "chromium", "quic-go-http3"]`, false, true},
	// A middlebox preset: an entry in Middlebox, its name in middlebox.preset's enum.
	{"engine/scenario/presets/middlebox.go", "var Middlebox = registry([]Preset{", "\t{Name: \"recipe-box\", Models: \"a box added by following the recipe\", Source: \"the recipe test\", YAML: \"idle_timeout: 1500ms\\non_expiry: drop\"},", false, false},
	{"schema/scenario.schema.json", `          "enum": ["aws-nat-gateway", "aws-nlb", "aws-network-firewall", "azure-lb", "azure-lb-tcp-reset", "gcp-cloud-nat", "gcp-cloud-nat-udp", "kube-conntrack", "kube-ipvs", "linux-conntrack", "linux-conntrack-udp"]`, `          "enum": ["recipe-box", "aws-nat-gateway", "aws-nlb", "aws-network-firewall", "azure-lb", "azure-lb-tcp-reset", "gcp-cloud-nat", "gcp-cloud-nat-udp", "kube-conntrack", "kube-ipvs", "linux-conntrack", "linux-conntrack-udp"]`, false, true},
	// A metric: a field of Metrics, its line in Docs, its property in the result schema,
	// and a hop's Flatten that produces it.
	{"engine/check/metrics.go", "\tTimeWait float64 `expr:\"time_wait\" json:\"time_wait\"`", "\tRecipeProbe float64 `expr:\"recipe_probe\" json:\"recipe_probe\"`", false, false},
	{"engine/check/docs.go", "var Docs = []MetricDoc{", "\t{\"recipe_probe\", \"connections\", \"the connections the client opened, again: a metric added by following the recipe\"},", false, false},
	{"schema/result.schema.json", `        "time_wait": {`, `        "recipe_probe": {"description": "the connections the client opened, again: a metric added by following the recipe. Unit: connections.", "type": "number", "minimum": 0},`, true, false},
	{"engine/topology/hops.go", "func (s linkStats) Flatten(into map[string]float64) {", "", false, false},
	{"engine/topology/clienthops.go", "\tinto[\"connections\"] = float64(c.Connections)", "\tinto[\"recipe_probe\"] = float64(c.Connections)", false, false},
}

// TestRecipesFollowed follows the recipes for a client preset, a middlebox preset and a
// metric on a copy of the module, builds kalab there and runs a file that uses all three:
// a client that closes connections idle for 1 s, behind a box that forgets flows idle for
// 1.5 s, over 4 requests 2 s apart. Each request opens a new connection (the client closed
// the last), the box forgets none (the client closed them first), and the new metric reads
// the connections: the file's checks say so, and kalab exits 0. A recipe whose steps no
// longer build or work fails here.
func TestRecipesFollowed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyModule(t, dir)
	for _, s := range recipeSteps {
		apply(t, dir, s)
	}
	bin := filepath.Join(dir, "kalab")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kalab")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the module does not build after the recipes: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "recipe.yaml")
	src := "name: recipe\nclient: {preset: recipe-agent}\nmiddlebox: {preset: recipe-box}\nload: {requests: 4, burst: 1, pause: 2s}\n" +
		"expect: [connections == 4, recipe_probe == connections, middlebox_flows == 4, middlebox_expired == 0]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "out"), "--no-requests", "--log-level", "warn")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("kalab run with the new preset, box and metric: %v\n%s", err, out)
	}
	help, err := exec.Command(bin, "help", "presets").Output()
	if err != nil || !bytes.Contains(help, []byte("recipe-agent: a client added by following the recipe")) || !bytes.Contains(help, []byte("recipe-box: a box added")) {
		t.Errorf("kalab help presets does not list the new presets (%v)", err)
	}
}

// copyModule copies the module's tracked tree (no .git, no results) to dst.
func copyModule(t *testing.T, dst string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "results", "node_modules":
				if rel != "." {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// apply makes one recipe step in the copy; an anchor that is gone or not unique fails.
func apply(t *testing.T, dir string, s step) {
	t.Helper()
	path := filepath.Join(dir, s.file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	at := -1
	for i, l := range lines {
		if l == s.anchor {
			if at >= 0 {
				t.Fatalf("%s: the recipe's anchor %q is not unique", s.file, s.anchor)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("%s: the recipe's anchor %q is gone: update the recipe in docs/architecture.md and this test", s.file, s.anchor)
	}
	if s.text == "" {
		return // the anchor only proves the place the recipe names is still there
	}
	switch {
	case s.replace:
		lines[at] = s.text
	case s.before:
		lines = append(lines[:at], append([]string{s.text}, lines[at:]...)...)
	default:
		lines = append(lines[:at+1], append([]string{s.text}, lines[at+1:]...)...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
