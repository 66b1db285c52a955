package realserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The keep-alive directives are written only where they differ from the running nginx's
// own defaults, so that the nginx preset's values (75 s, 1000, no hint) run nginx as
// shipped; an nginx older than 1.19.10 (default keepalive_requests 100), or one whose
// version is unknown, gets keepalive_requests written, so what was asked for holds.
func TestNginxKeepaliveOnlyWhereNotTheDefault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg  Config
		want []string
	}{
		{Config{IdleTimeout: 75 * time.Second, MaxRequests: 1000, version: "1.22.1"}, nil},
		{Config{IdleTimeout: 75 * time.Second, MaxRequests: 1000, version: "1.19.10"}, nil},
		{Config{IdleTimeout: 75 * time.Second, MaxRequests: 1000, version: "1.18.0"}, []string{"keepalive_requests 1000;"}},
		{Config{IdleTimeout: 75 * time.Second, MaxRequests: 1000}, []string{"keepalive_requests 1000;"}},
		{Config{IdleTimeout: 75 * time.Second, MaxRequests: 1000, Hint: "timeout=75", version: "1.22.1"}, []string{"keepalive_timeout 75000ms 75s;"}},
		{Config{IdleTimeout: 2 * time.Second, version: "1.22.1"}, []string{"keepalive_timeout 2000ms;", fmt.Sprintf("keepalive_requests %d;", nginxUnlimited)}},
		{Config{IdleTimeout: 75 * time.Second, MaxRequests: 100, version: "1.22.1"}, []string{"keepalive_requests 100;"}},
	}
	for _, c := range cases {
		var got []string
		nginxKeepalive(func(f string, a ...any) { got = append(got, strings.TrimSpace(fmt.Sprintf(f, a...))) }, c.cfg)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("idle %v, max %d, hint %q, nginx %q: wrote %q, want %q", c.cfg.IdleTimeout, c.cfg.MaxRequests, c.cfg.Hint, c.cfg.version, got, c.want)
		}
	}
	for _, v := range []struct {
		v    string
		want bool
	}{{"1.19.10", true}, {"1.19.9", false}, {"1.22.1", true}, {"2.0", true}, {"1.19", false}, {"2.0.0", true}, {"", false}, {"1.x.3", false}} {
		if got := versionAtLeast(v.v, 1, 19, 10); got != v.want {
			t.Errorf("versionAtLeast(%q, 1.19.10) = %v", v.v, got)
		}
	}
}

// Node's bundled server leaves keepAliveTimeout and maxRequestsPerSocket to Node where the
// value asked for is Node's own default (the node preset's 6 s close, no limit), and sets
// them otherwise; the real Node says what it runs with.
func TestNodeKeepaliveOnlyWhereNotTheDefault(t *testing.T) {
	t.Parallel()
	need(t, "node")
	cases := []struct {
		cfg  Config
		conf []string
		logs string
	}{
		{Config{Kind: Node, IdleTimeout: 6 * time.Second, Hint: "timeout=5"}, []string{`"keepAliveTimeout":null`, `"maxRequestsPerSocket":null`, `"hint":null`}, "keepAliveTimeout 5000 ms, headersTimeout 60000 ms, maxRequestsPerSocket 0"},
		{Config{Kind: Node, IdleTimeout: 2 * time.Second, MaxRequests: 7}, []string{`"keepAliveTimeout":1000`, `"maxRequestsPerSocket":7`}, "keepAliveTimeout 1000 ms, headersTimeout 60000 ms, maxRequestsPerSocket 7"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		c.cfg.LogDir = dir
		s, err := Start(context.Background(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		conf, err := os.ReadFile(filepath.Join(dir, "node-config.json"))
		if err != nil {
			t.Fatal(err)
		}
		logs, _ := os.ReadFile(filepath.Join(dir, "node.log"))
		for _, want := range c.conf {
			if !strings.Contains(string(conf), want) {
				t.Errorf("idle %v, max %d: configuration %s, want %s in it", c.cfg.IdleTimeout, c.cfg.MaxRequests, conf, want)
			}
		}
		if !strings.Contains(string(logs), c.logs) {
			t.Errorf("idle %v, max %d: Node says %q, want %q", c.cfg.IdleTimeout, c.cfg.MaxRequests, logs, c.logs)
		}
	}
}
