package realserver

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A proxy's configuration passes every request to the upstream with its pool as the
// scenario gives it, and answers nothing itself.
func TestUpstreamConfigs(t *testing.T) {
	cfg := Config{IdleTimeout: 2 * time.Second, Upstream: "127.0.0.1:4000", UpstreamKeepalive: 16, UpstreamIdle: time.Minute}
	for _, c := range []struct {
		kind       Kind
		want, gone []string
	}{
		{Nginx, []string{"keepalive_timeout 2000ms;", "server 127.0.0.1:4000;", "keepalive 16;", "keepalive_timeout 60000ms;",
			"proxy_pass http://kalab_next;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`}, []string{"return "}},
		{HAProxy, []string{"timeout http-keep-alive 2000ms", "default_backend kalab_next", "server next 127.0.0.1:4000 pool-purge-delay 60000ms"},
			[]string{"http-request return", "http-server-close"}},
	} {
		cfg := cfg
		cfg.Kind = c.kind
		if err := Check(cfg); err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		dir := t.TempDir()
		_, conf, err := adapters[c.kind].prepare(cfg, dir, 5000, certFiles{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s's configuration lacks %q:\n%s", c.kind, w, text)
			}
		}
		for _, g := range c.gone {
			if strings.Contains(text, g) {
				t.Errorf("%s's configuration has %q, which a proxy must not:\n%s", c.kind, g, text)
			}
		}
	}
}

// What a proxy kalab configures cannot carry is refused, every problem at once.
func TestUpstreamRefusals(t *testing.T) {
	err := Check(Config{Kind: Nginx, Upstream: "10.0.0.1:80", TLS: true})
	for _, want := range []string{"plain HTTP/1.1", "idle timeout must be a duration", "dials loopback only"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want it to say %q", err, want)
		}
	}
	if err := Check(Config{Kind: Node, Upstream: "127.0.0.1:80", IdleTimeout: time.Second}); err == nil || !strings.Contains(err.Error(), "a balancer is nginx or haproxy") {
		t.Errorf("a Node proxy: %v", err)
	}
}
