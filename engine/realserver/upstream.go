package realserver

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// A real nginx or HAProxy as a balancer: a reverse proxy to Config.Upstream, configured with
// its client-facing idle timeout and its pool of upstream connections; everything else is
// the program's own (nginx's proxy_next_upstream error timeout, HAProxy's http-reuse safe
// and retry-on conn-failure).

// checkUpstream refuses what a proxy kalab configures cannot carry.
func checkUpstream(cfg Config) error {
	var errs []error
	if cfg.Kind == Node {
		errs = append(errs, unsupported(Node, "Upstream", "kalab's Node server answers requests itself; a balancer is nginx or haproxy"))
	}
	if cfg.TLS || cfg.HTTP2 {
		errs = append(errs, unsupported(cfg.Kind, "Upstream", "kalab configures a proxy for plain HTTP/1.1 on both sides"))
	}
	if cfg.IdleTimeout <= 0 {
		errs = append(errs, unsupported(cfg.Kind, "IdleTimeout", "a proxy's client-facing idle timeout must be a duration"))
	}
	if host, _, err := net.SplitHostPort(cfg.Upstream); err != nil || !loopbackHost(host) {
		errs = append(errs, fmt.Errorf("upstream %q: a proxy kalab starts dials loopback only", cfg.Upstream))
	}
	if len(cfg.Events) > 0 {
		errs = append(errs, unsupported(cfg.Kind, "Events", "events apply to a server, not to a balancer"))
	}
	return errors.Join(errs...)
}

func loopbackHost(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// nginxUpstream writes the http block's upstream and proxy directives: an upstream pool
// with keepalive (and, since 1.15.3, its keepalive_timeout), HTTP/1.1 to it with the
// Connection header cleared so that its connections are kept (ngx_http_upstream_module
// "keepalive": "For HTTP, the proxy_http_version directive should be set to 1.1 and the
// Connection header field should be cleared").
func nginxUpstream(w func(string, ...any), cfg Config) {
	w("  upstream kalab_next {")
	w("    server %s;", cfg.Upstream)
	if cfg.UpstreamKeepalive > 0 {
		w("    keepalive %d;", cfg.UpstreamKeepalive)
		idle := cfg.UpstreamIdle
		if idle <= 0 {
			idle = 24 * time.Hour // never within a run; nginx's own default is 60 s
		}
		w("    keepalive_timeout %s;", ms(idle))
		w("    keepalive_requests %d;", nginxUnlimited)
	}
	w("  }")
}

// nginxProxyLocation is the location that passes every request to the upstream.
func nginxProxyLocation(w func(string, ...any)) {
	w("    location / {")
	w("      proxy_pass http://kalab_next;")
	w("      proxy_http_version 1.1;")
	w("      proxy_set_header Connection \"\";")
	w("    }")
}

// haproxyUpstream writes the frontend's route to a backend of one server. Its idle server
// connections are purged in halves every pool-purge-delay (HAProxy's server keyword, 5 s
// by default); without an upstream idle time kalab sets a day, so that none is purged in a
// run.
func haproxyUpstream(w func(string, ...any), cfg Config) {
	purge := cfg.UpstreamIdle
	if purge <= 0 {
		purge = 24 * time.Hour
	}
	w("  default_backend kalab_next")
	w("backend kalab_next")
	w("  timeout connect 5s")
	w("  timeout server %s", ms(max(haproxyClientTimeout, 2*cfg.IdleTimeout)))
	if cfg.UpstreamKeepalive == 0 {
		w("  option http-server-close")
	}
	w("  server next %s pool-purge-delay %s", cfg.Upstream, ms(purge))
}
