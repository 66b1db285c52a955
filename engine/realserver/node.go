package realserver

import (
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed node-server.js
var nodeScript []byte

// NodeKeepAliveBuffer is what Node's http.Server adds to keepAliveTimeout before it closes
// an idle socket: Node 20.20.2 with keepAliveTimeout 1000 closes at 2,002 ms here. The
// buffer is fixed in Node 20 (lib/_http_server.js) and became server.keepAliveTimeoutBuffer,
// default 1000, in later releases (nodejs/node#59243).
const NodeKeepAliveBuffer = time.Second

// nodeHeadersTimeout is Node's default headersTimeout (min(60000, requestTimeout)); it
// only bounds how long a request's headers may take, never an idle connection.
const nodeHeadersTimeout = 60 * time.Second

// nodeDefaultKeepAliveTimeout is http.Server's keepAliveTimeout when nothing sets it
// (doc/api/http.md server.keepAliveTimeout: 5000; Node 20.20.2 prints 5000 here).
const nodeDefaultKeepAliveTimeout = 5 * time.Second

// nodeUnlessDefault is v for the script to set, or nil when it is Node's own default
// (def): the script then leaves the setting alone, so a run of the node preset's values
// runs Node's http.Server as shipped and a truth file comparing them checks the default
// itself (scenarios/truth/servers.yaml); the script logs what the server runs with.
func nodeUnlessDefault(v, def int64) any {
	if v == def {
		return nil
	}
	return v
}

// nodeAdapter runs the bundled script: IdleTimeout becomes keepAliveTimeout minus Node's
// buffer, MaxRequests maxRequestsPerSocket.
type nodeAdapter struct{}

func (nodeAdapter) program() string       { return "node" }
func (nodeAdapter) versionArgs() []string { return []string{"--version"} }
func (nodeAdapter) version(out string) string {
	return strings.TrimPrefix(strings.TrimSpace(out), "v")
}

// NodeKeepAliveTimeout is the keepAliveTimeout that makes Node close an idle connection at
// idle: idle minus NodeKeepAliveBuffer. It is 0 (never) for idle 0, and not positive when
// Node cannot close that early.
func NodeKeepAliveTimeout(idle time.Duration) time.Duration {
	if idle <= 0 {
		return 0
	}
	return idle - NodeKeepAliveBuffer
}

// nodeNativeHint is the Keep-Alive value Node sends by itself, without its max= part.
func nodeNativeHint(kat time.Duration) string {
	if kat <= 0 {
		return ""
	}
	return "timeout=" + strconv.FormatInt(int64(kat/time.Second), 10)
}

func (nodeAdapter) check(cfg Config) error {
	var errs []error
	if cfg.IdleTimeout > 0 && NodeKeepAliveTimeout(cfg.IdleTimeout) <= 0 {
		errs = append(errs, unsupported(Node, "IdleTimeout", "Node closes an idle socket %v after keepAliveTimeout, so it cannot close at %v; give more than %v (at this time scale)", NodeKeepAliveBuffer, cfg.IdleTimeout, NodeKeepAliveBuffer))
	}
	if cfg.HTTP2 {
		errs = append(errs, unsupported(Node, "HTTP2", "the bundled Node server speaks HTTP/1.1 only"))
	}
	if cfg.HintOnlyIfAsked {
		errs = append(errs, unsupported(Node, "HintOnlyIfAsked", "Node sends its Keep-Alive header whatever the request asked"))
	}
	if cfg.CloseEvery > 0 {
		errs = append(errs, unsupported(Node, "CloseEvery", "Node closes after maxRequestsPerSocket on one connection, not every N-th response; use max_requests"))
	}
	if cfg.MaxConcurrentStreams > 0 {
		errs = append(errs, unsupported(Node, "MaxConcurrentStreams", "the bundled Node server speaks HTTP/1.1 only"))
	}
	return errors.Join(errs...)
}

func (nodeAdapter) prepare(cfg Config, dir string, port int, files certFiles) ([]string, string, error) {
	kat := NodeKeepAliveTimeout(cfg.IdleTimeout)
	var hint *string // nil: Node's own header
	if cfg.Hint != nodeNativeHint(kat) {
		h := cfg.Hint
		if h != "" && cfg.MaxRequests > 0 {
			h += ", max=" + strconv.Itoa(cfg.MaxRequests) // as Node appends it
		}
		hint = &h
	}
	params := map[string]any{
		"port":                 port,
		"tls":                  cfg.TLS,
		"cert":                 files.cert,
		"key":                  files.key,
		"tlsVersion":           map[bool]string{true: "TLSv1.2", false: "TLSv1.3"}[cfg.TLSVersion == tls.VersionTLS12],
		"sessionTickets":       cfg.SessionTickets,
		"keepAliveTimeout":     nodeUnlessDefault(kat.Milliseconds(), nodeDefaultKeepAliveTimeout.Milliseconds()),
		"headersTimeout":       nodeHeadersTimeout.Milliseconds(),
		"maxRequestsPerSocket": nodeUnlessDefault(int64(cfg.MaxRequests), 0),
		"hint":                 hint,
		"status":               cfg.Status,
		"bodyBytes":            cfg.BodyBytes,
		"delayMs":              float64(cfg.Delay) / float64(time.Millisecond),
	}
	js, err := json.Marshal(params)
	if err != nil {
		return nil, "", err
	}
	script := filepath.Join(dir, "kalab-node-server.js")
	if err := os.WriteFile(script, nodeScript, 0o644); err != nil {
		return nil, "", err
	}
	conf := filepath.Join(dir, "node-config.json")
	if err := os.WriteFile(conf, js, 0o644); err != nil {
		return nil, "", err
	}
	return []string{script, string(js)}, conf, nil
}
