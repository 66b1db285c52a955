package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kalab-dev/kalab/engine/testkit/testci"

	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/report"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// A run of a real program that a preset models gets a note when the program's version is
// not one the preset lists as verified, and none at a verified version or for a program no
// preset models.
func TestVersionNotes(t *testing.T) {
	t.Parallel()
	client := func(adapter, version string) *report.Run {
		return &report.Run{Client: &report.ClientRuntime{Adapter: adapter, Version: version}}
	}
	server := func(kind, version string) *report.Run {
		return &report.Run{Server: &report.Server{Kind: kind, Version: version}}
	}
	balancer := func(name, version string) *report.Run { // a real balancer's hop record
		return &report.Run{Hops: []report.Hop{{Role: "balancer", Kind: "balancer", Name: name, Program: "/usr/sbin/" + name, Version: version}}}
	}
	cases := []struct {
		name string
		rec  *report.Run
		want string // a part of the one note; "" for none
	}{
		{"fetch-other", client("node-fetch", "node 20.20.2 undici 6.99.0 openssl 3.0.19"),
			"undici 6.99.0 is not among the versions the undici preset was verified against (6.24.1 on 2026-12-07, 7.30.3 on 2026-12-07): this run says what undici 6.99.0 does, the preset may not"},
		{"fetch-verified", client("node-fetch", "node 20.20.2 undici 6.24.1 openssl 3.0.19"), ""},
		{"fetch-same-minor", client("node-fetch", "node 20.20.2 undici 6.24.0 openssl 3.0.19"), ""},
		{"agent-node22", client("node-agent", "node 22.11.0 undici 6.21.0 openssl 3.0.15"), "node 22.11.0 is not among the versions the node-agent preset"},
		{"go-other", client("go-http", "go version go1.25.3 linux/amd64"), "go 1.25.3 is not among the versions the go-default preset was verified against (1.26.8 on 2026-12-07, 1.22.12 on 2026-12-05)"},
		{"requests-verified", client("python-requests", "python 3.11.7 requests 2.34.2 urllib3 2.7.0 openssl 3.0.19"), ""},
		{"libcurl-other", client("libcurl", "python 3.11.7 libcurl/8.5.0 OpenSSL/3.0.19"), "libcurl 8.5.0 is not among the versions the curl-multi preset was verified against (7.88.1 on 2026-12-05, 8.14.1 on 2026-12-05)"},
		{"curl-loop-other", client("curl-loop", "curl 8.5.0 (x86_64-pc-linux-gnu) libcurl/8.5.0"), "curl 8.5.0 is not among the versions the curl-loop preset"},
		{"own-command", &report.Run{Client: &report.ClientRuntime{Command: []string{"bash", "c.sh"}, Version: "bash 5.2"}}, ""},
		{"no-version", client("node-fetch", ""), ""},
		{"nginx-other", server("nginx", "1.26.3"), "nginx 1.26.3 is not among the versions the nginx preset was verified against (1.22.1 on 2026-12-02)"},
		{"nginx-verified", server("nginx", "1.22.1"), ""},
		{"node-server-other", server("node", "22.11.0"), "node 22.11.0 is not among the versions the node preset"},
		{"haproxy", server("haproxy", "2.6.12"), ""},
		{"embedded", server("embedded", "dev"), ""},
		{"balancer-haproxy-debian", balancer("haproxy", "2.6.12-1+deb12u4"), ""},
		{"balancer-haproxy-other", balancer("haproxy", "2.8.5-1ubuntu3"), "haproxy 2.8.5 is not among the versions the haproxy preset was verified against (2.6.12 on 2026-12-07)"},
		{"balancer-nginx-other", balancer("nginx", "1.26.3"), "nginx 1.26.3 is not among the versions the nginx-proxy preset"},
		{"balancer-kalab", &report.Run{Hops: []report.Hop{{Role: "balancer", Kind: "balancer", Name: "kalab"}}}, ""},
	}
	for _, c := range cases {
		got := versionNotes(c.rec)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: notes %q, want none", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: notes %q, want one with %q", c.name, got, c.want)
		}
		rec := *c.rec
		rec.Notes = append([]string{"exec client: ran at time scale 1, not 0.5"}, got...)
		if len(rec.VersionNotes()) != len(got) {
			t.Errorf("%s: the record's version notes %q, want %q", c.name, rec.VersionNotes(), got)
		}
	}
}

// Every bundled adapter names a client preset that exists and lists the adapter's program
// among the versions it was verified against, so a run of the adapter is held to them.
func TestAdaptersNameTheirPreset(t *testing.T) {
	t.Parallel()
	for _, name := range execclient.Names() {
		a, _ := execclient.Lookup(name)
		p, ok := scenario.ClientPresets[a.Preset]
		if !ok {
			t.Errorf("%s: preset %q is not a client preset", name, a.Preset)
			continue
		}
		if p.VersionsOf(a.Program) == "" {
			t.Errorf("%s: preset %s lists no version of %q (it lists %q)", name, a.Preset, a.Program, p.Verified)
		}
	}
}

// A node-fetch run on a Node whose bundled undici says 6.99.0 (a stand-in: the real node,
// behind a script that answers the version probe) gets the note in its record and in the
// summary kalab run prints; the same run on a Node that says 6.24.1, the version the undici
// preset was verified against, gets none. Not parallel: the stand-in is on PATH.
func TestUnverifiedVersionIsSaid(t *testing.T) {
	node := testci.Program(t, "node") // the stand-in runs the node-fetch adapter on it
	src := `
name: versions
server: {idle_timeout: 5s}
load: {requests: 3}
variants:
  - {name: model, client: {preset: undici}}
  - {name: real, client: {exec: node-fetch}}
compare: ["variant('real').errors == variant('model').errors"]
`
	path := os.Getenv("PATH")
	for _, undici := range []string{"6.99.0", "6.24.1"} {
		bin := t.TempDir()
		script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -p ]; then echo 'node 20.20.2 undici %s openssl 3.0.19'; exit 0; fi\nexec %s \"$@\"\n", undici, node)
		if err := os.WriteFile(filepath.Join(bin, "node"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+path)
		out, err := Execute(context.Background(), plan(t, src), opts(t))
		if err != nil {
			t.Fatal(err)
		}
		var real *report.Run
		for _, r := range out.Runs {
			if r.Variant == "real" {
				real = r
			}
		}
		needRuntime(t, real)
		if real.Client.Version != "node 20.20.2 undici "+undici+" openssl 3.0.19" {
			t.Fatalf("the run recorded version %q: the stand-in did not answer the probe", real.Client.Version)
		}
		note := "undici 6.99.0 is not among the versions the undici preset was verified against (6.24.1 on 2026-12-07, 7.30.3 on 2026-12-07)"
		if undici == "6.24.1" {
			if len(real.VersionNotes()) > 0 {
				t.Errorf("undici 6.24.1 is verified, yet notes %q", real.Notes)
			}
			continue
		}
		if notes := real.VersionNotes(); len(notes) != 1 || !strings.HasPrefix(notes[0], note) {
			t.Errorf("undici 6.99.0: notes %q, want one starting %q", real.Notes, note)
		}
	}
}
