package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/check"
)

func parseOK(t *testing.T, src string) *Scenario {
	t.Helper()
	s, ds := Parse("t.yaml", []byte(src))
	if len(ds) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", ds.Error())
	}
	return s.Scenario
}

func TestBundledScenariosLoad(t *testing.T) {
	files, err := FindFiles([]string{"../../scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := LoadFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Scenarios) < 3 {
		t.Fatalf("%d bundled scenarios; want at least 3", len(plan.Scenarios))
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		// The schema's path relative to the file, so editors find it from a subfolder too.
		rel, err := filepath.Rel(filepath.Dir(f), "../../schema/scenario.schema.json")
		if err != nil {
			t.Fatal(err)
		}
		line := "# yaml-language-server: $schema=" + filepath.ToSlash(rel) + "\n"
		if !bytes.HasPrefix(data, []byte(line)) {
			t.Errorf("%s does not start with %q", f, line)
		}
	}
}

func TestDefaultsWithoutPresets(t *testing.T) {
	s := parseOK(t, "name: bare\n")
	if len(s.Runs) != 1 || s.Runs[0].Variant != "default" {
		t.Fatalf("runs = %+v; want one run named default", s.Runs)
	}
	got := s.Runs[0].Settings
	if got.TimeScale != 1 || got.Client.Implementation != "model" || !got.Client.KeepAlive ||
		got.Server.IdleTimeout.D() != 5*time.Second || got.Load.Requests != 100 || got.Server.HTTP != "1.1" ||
		got.Server.KeepaliveHint.Mode != HintOff || got.Client.Retry.Attempts != 0 {
		t.Fatalf("defaults = %+v", got)
	}
}

func TestPresetsApplyUnderFileValues(t *testing.T) {
	s := parseOK(t, `
name: p
server: {preset: node}
client: {preset: undici, idle_timeout: 1500ms}
variants:
  - name: base
  - name: agent
    client: {preset: node-agent}
`)
	base, agent := s.Runs[0].Settings, s.Runs[1].Settings
	if base.Server.IdleTimeout.D() != 6*time.Second || base.Server.KeepaliveHint != (Hint{Mode: HintDuration, Duration: Duration(5 * time.Second)}) {
		t.Errorf("node server preset not applied: %+v", base.Server)
	}
	if base.Client.HintParser != "undici" || base.Client.HintBuffer.D() != 2*time.Second {
		t.Errorf("undici preset not applied: %+v", base.Client)
	}
	if base.Client.IdleTimeout.D() != 1500*time.Millisecond || agent.Client.IdleTimeout.D() != 1500*time.Millisecond {
		t.Errorf("the file's idle_timeout must win over both presets: %v, %v", base.Client.IdleTimeout, agent.Client.IdleTimeout)
	}
	if agent.Client.HintParser != "node" || agent.Client.HintBuffer.D() != time.Second {
		t.Errorf("variant preset not applied: %+v", agent.Client)
	}
}

func TestEveryPresetDecodes(t *testing.T) {
	for _, sec := range []struct {
		name string
		reg  map[string]*Preset
	}{{"server", ServerPresets}, {"client", ClientPresets}, {"balancer", BalancerPresets}} {
		for name, p := range sec.reg {
			if _, ds := Parse("t.yaml", []byte(fmt.Sprintf("name: x\n%s:\n  preset: %s\n", sec.name, name))); len(ds) > 0 {
				t.Errorf("preset %s: %s", name, ds.Error())
			}
			if p.Models == "" || p.Source == "" {
				t.Errorf("preset %s lacks the version it models or its source", name)
			}
			// The preset's own fields must pass the schema, like a user's would.
			body := "name: x\n" + sec.name + ":\n  " + strings.ReplaceAll(p.YAML, "\n", "\n  ") + "\n"
			if strings.Contains(p.YAML, "quic:") { // an HTTP/3 client's fields, on the run that reads them
				body += "server: {http: \"3\", idle_timeout: 30s}\n"
			}
			if _, ds := Parse("preset.yaml", []byte(body)); len(ds) > 0 {
				t.Errorf("preset %s fields fail the schema: %s", name, ds.Error())
			}
		}
	}
	curl := parseOK(t, "name: x\nclient: {preset: curl-multi}\n").Runs[0].Settings.Client
	if curl.Retry.Attempts != 5 || !curl.Retry.ZeroBytesOnly || !curl.LivenessCheck || curl.IdleTimeout.D() != 118*time.Second {
		t.Errorf("curl-multi = %+v", curl)
	}
}

func TestMatrixExpansion(t *testing.T) {
	s := parseOK(t, `
name: m
matrix:
  network.rtt: [1ms, 50ms]
  client.keepalive: [true, false]
  server.idle_timeout: [2s]
  client.idle_timeout: [none]
variants:
  - name: a
  - name: b
    load: {requests: 7}
`)
	var names []string
	for _, r := range s.Runs {
		names = append(names, r.Variant)
	}
	want := []string{
		"a,rtt=1ms,keepalive=true,server.idle_timeout=2s,client.idle_timeout=none",
		"a,rtt=1ms,keepalive=false,server.idle_timeout=2s,client.idle_timeout=none",
		"a,rtt=50ms,keepalive=true,server.idle_timeout=2s,client.idle_timeout=none",
		"a,rtt=50ms,keepalive=false,server.idle_timeout=2s,client.idle_timeout=none",
		"b,rtt=1ms,keepalive=true,server.idle_timeout=2s,client.idle_timeout=none",
		"b,rtt=1ms,keepalive=false,server.idle_timeout=2s,client.idle_timeout=none",
		"b,rtt=50ms,keepalive=true,server.idle_timeout=2s,client.idle_timeout=none",
		"b,rtt=50ms,keepalive=false,server.idle_timeout=2s,client.idle_timeout=none",
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("names:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	r := s.Runs[7]
	if r.Settings.Network.RTT.D() != 50*time.Millisecond || r.Settings.Client.KeepAlive || r.Settings.Load.Requests != 7 {
		t.Fatalf("run %s settings = %+v", r.Variant, r.Settings)
	}
	if r.Matrix["network.rtt"] != "50ms" || r.Matrix["client.keepalive"] != "false" {
		t.Fatalf("matrix values = %v", r.Matrix)
	}
}

func TestVariantMergeKeepsSiblings(t *testing.T) {
	s := parseOK(t, `
name: v
client:
  retry: {attempts: 1, on: [reset]}
  idle_timeout: 2s
variants:
  - name: x
    client:
      retry: {attempts: 2}
`)
	c := s.Runs[0].Settings.Client
	if c.Retry.Attempts != 2 || !reflect.DeepEqual(c.Retry.On, []string{"reset"}) || c.IdleTimeout.D() != 2*time.Second {
		t.Fatalf("merged client = %+v", c)
	}
}

func TestExpectAndCompareCompiled(t *testing.T) {
	s := parseOK(t, `
name: e
variants:
  - name: a
    expect: ["errors == 0"]
  - name: b
expect: ["requests == 100"]
compare: ["variant('a').errors <= variant('b').errors"]
`)
	if len(s.Runs[0].Expect) != 2 || len(s.Runs[1].Expect) != 1 {
		t.Fatalf("expect counts %d, %d; want 2, 1", len(s.Runs[0].Expect), len(s.Runs[1].Expect))
	}
	a := s.Runs[0].Expect[1]
	if a.Line != 5 || a.Col != 14 {
		t.Errorf("position %d:%d; want 5:14", a.Line, a.Col)
	}
	ok, err := a.Eval(check.Metrics{Errors: 0})
	if err != nil || !ok {
		t.Errorf("errors == 0 on zero errors: %v %v", ok, err)
	}
	ok, err = s.Compare[0].EvalCompare(func(n string) (check.Metrics, bool) {
		return check.Metrics{Errors: map[string]float64{"a": 1, "b": 3}[n]}, true
	})
	if err != nil || !ok {
		t.Errorf("compare: %v %v", ok, err)
	}
}

func TestHintForms(t *testing.T) {
	for src, want := range map[string]Hint{
		"false":                Hint{Mode: HintOff},
		"true":                 Hint{Mode: HintOn},
		"1s":                   Hint{Mode: HintDuration, Duration: Duration(time.Second)},
		`"timeout=5, max=100"`: Hint{Mode: HintRaw, Raw: "timeout=5, max=100"},
	} {
		s := parseOK(t, "name: h\nserver: {keepalive_hint: "+src+"}\n")
		if got := s.Runs[0].Settings.Server.KeepaliveHint; got != want {
			t.Errorf("%s: %+v; want %+v", src, got, want)
		}
	}
}

func TestSettingsJSONReadsLikeTheFile(t *testing.T) {
	s := parseOK(t, "name: j\nnetwork: {rtt: 150ms}\nload: {requests: 10, burst: 5, pause: 1.5s..2.5s}\n")
	b, err := json.Marshal(s.Runs[0].Settings)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rtt":"150ms"`, `"pause":"1.5s..2.5s"`, `"idle_timeout":"5s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("settings JSON lacks %s: %s", want, b)
		}
	}
}

func TestFindFilesOrder(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.yaml", "a.yml", "c.txt", ".hidden/x.yaml", "sub/d.yaml"} {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("name: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FindFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "sub/d.yaml")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v; want %v", got, want)
	}
}
