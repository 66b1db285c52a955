package realserver

import (
	"fmt"
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
