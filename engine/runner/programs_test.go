package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/scenario"
)

// Every way a file starts a program is found, at its line, and each policy allows
// exactly its part: a bundled adapter or server with bundled, a command or a run with
// env: (NODE_OPTIONS can make node run anything) only with all.
func TestProgramsAndPolicy(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "p.yaml")
	src := `name: p
load: {requests: 2}
variants:
  - name: embedded
  - name: adapter
    client: {exec: node-agent}
  - name: adapter-env
    client: {exec: node-agent}
    env: [NODE_OPTIONS=--require=./x.js]
  - name: command
    client: {exec: {command: [./my client, -v]}}
  - name: nginx
    server: {exec: nginx, idle_timeout: 2s}
  - name: sh
    server: {command: "python3 -m http.server {port}"}
  - name: url
    server: {url: "http://127.0.0.1:9/"}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := scenario.LoadFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range Programs(plan) {
		got = append(got, strings.Join([]string{p.Variant, p.Path, p.Command, map[bool]string{true: "bundled", false: "any"}[p.Bundled]}, "|"))
	}
	want := []string{
		"adapter|client.exec|node-agent (bundled adapter)|bundled",
		"adapter-env|client.exec|node-agent (bundled adapter) with env: NODE_OPTIONS|any",
		`command|client.exec|"./my client" -v|any`,
		"nginx|server.exec|nginx (bundled server)|bundled",
		`sh|server.command|/bin/sh -c "python3 -m http.server {port}"|any`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("programs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	refused := func(policy ExecPolicy) string {
		var lines []string
		for _, d := range CheckExec(plan, policy) {
			lines = append(lines, d.String()[len(file):strings.Index(d.String(), " would")])
		}
		return strings.Join(lines, " ")
	}
	if got, want := refused(ExecNone), ":6:20: client.exec: :8:20: client.exec: :11:21: client.exec: :13:20: server.exec: :15:23: server.command:"; got != want {
		t.Errorf("none refuses %q, want %q", got, want)
	}
	if got, want := refused(ExecBundled), ":8:20: client.exec: :11:21: client.exec: :15:23: server.command:"; got != want {
		t.Errorf("bundled refuses %q, want %q", got, want)
	}
	if got := refused(ExecAll); got != "" {
		t.Errorf("all refuses %q", got)
	}
}

func TestParseExecPolicy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ExecPolicy{"": ExecNone, "none": ExecNone, "0": ExecNone, "false": ExecNone,
		"bundled": ExecBundled, "Bundled": ExecBundled, "all": ExecAll, "1": ExecAll, "true": ExecAll} {
		if got, err := ParseExecPolicy(in); err != nil || got != want {
			t.Errorf("ParseExecPolicy(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseExecPolicy("yes"); err == nil {
		t.Error("yes accepted")
	}
}
