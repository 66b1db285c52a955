// Package adapter is the catalogue of kalab's bundled client programs (client.exec): what
// each runs, and what it can honour of a scenario's client section. It is a leaf: the
// scenario language checks files against it, and execclient runs the programs it names.
package adapter

import (
	"fmt"
	"regexp"
	"sort"
)

// Adapter is a bundled client program: a small script for a real runtime that speaks
// the exec protocol, and what it can honour of a scenario's client section.
type Adapter struct {
	Name    string // as written in client.exec
	Runtime string // the program it needs on PATH (node, python3, curl, go)
	Models  string // what it drives, for help texts and the README
	// Interpreter and Script: the adapter runs as Interpreter Script (written to a
	// temporary directory at run time).
	Interpreter string
	Script      string
	// Knobs maps the client fields it honours to the runtime setting each one sets.
	Knobs map[string]string
	// Fixed maps client fields the runtime has no setting for to the one value it
	// behaves as; the field may be written with that value only.
	Fixed map[string]Fixed
	// Build, when set, are Runtime's arguments that compile Script into a program, given
	// the output path and the script after them (go build -o OUT SCRIPT): kalab builds it
	// before the run, so neither the run's clock nor its deadline counts the build, and
	// runs the program it built instead of Interpreter Script.
	Build []string
	// Inherit names variables of kalab's environment Runtime needs to find its toolchain
	// and caches (GOCACHE, GOROOT, ...), passed to the build and the program when set.
	Inherit []string
	// NoPause: it cannot wait between requests (one curl process runs its URLs back to back).
	NoPause bool
	// Sequential: it runs one request at a time.
	Sequential bool
	Probe      []string // Runtime's arguments that print its versions
	// Preset is the client preset that models what the adapter drives, and Program the
	// name in Probe's line whose version that preset lists as verified (undici for
	// node-fetch); a run of another version says so in its record.
	Preset, Program string
	// Versions, when set, says what client.exec's version names for this adapter: the
	// release of the library it runs, where it can run another than its runtime's own.
	Versions string
	// versionForm is the form of a version it takes.
	versionForm *regexp.Regexp
	// ProbeScript: the probe runs Script itself, read on standard input, with Probe's
	// arguments and then client.version when the file set it; it fails when it cannot run
	// that version.
	ProbeScript bool
	// Native: kalab drives the program itself (Chromium over its DevTools pipe) instead of
	// running a script that speaks the exec protocol; it has no Script.
	Native bool
}

// Fixed is a value a runtime cannot change, and why.
type Fixed struct {
	Value string // as the field's canonical form: true, false, 0s, 118s, 0, undici
	Why   string
}

// The client fields every command receives in the plan (the request itself).
var requestFields = map[string]bool{"method": true, "path": true, "headers": true}

// Ignored are client fields that describe kalab's own clients; an exec run ignores them
// (the run record says so) rather than refuse a file that compares a model with a real
// client in two variants.
var Ignored = map[string]bool{"preset": true, "implementation": true, "tls_key_share": true}

// nodeProbe prints the versions of Node, its bundled undici and its OpenSSL.
var nodeProbe = []string{"-p", `"node " + process.versions.node + " undici " + process.versions.undici + " openssl " + process.versions.openssl`}

var adapters = map[string]*Adapter{
	"node-agent": {
		Name: "node-agent", Preset: "node-agent", Program: "node", Runtime: "node", Interpreter: "node", Script: "node-agent.mjs",
		Models: "Node's http(s).request with one http(s).Agent",
		Knobs: map[string]string{
			"keepalive":          "Agent keepAlive",
			"idle_timeout":       "Agent timeout (a free socket idle this long is destroyed)",
			"max_conns":          "Agent maxSockets",
			"max_idle":           "Agent maxFreeSockets",
			"scheduling":         "Agent scheduling",
			"session_resumption": "Agent maxCachedSessions (0 when false)",
			"timeout":            "a timer that destroys the request (ETIMEDOUT)",
		},
		Fixed: map[string]Fixed{
			"http2":            {"never", "Node's https.Agent offers only http/1.1 in ALPN"},
			"keepalive_header": {"true", "Node's http client sends Connection: keep-alive"},
			"honor_hint":       {"true", "Node's agent always reads Keep-Alive: timeout=N (lib/_http_agent.js keepSocketAlive)"},
			"hint_parser":      {"node", "Node's agent reads the hint with ^timeout=(\\d+)"},
			"hint_buffer":      {"1s", "Node's agent subtracts a fixed 1000 ms from the hint"},
			"liveness_check":   {"true", "Node drops a free socket as soon as its FIN arrives"},
			"retry.attempts":   {"0", "Node's http client never re-sends a request"},
		},
		Probe: nodeProbe,
	},
	"node-fetch": {
		Name: "node-fetch", Preset: "undici", Program: "undici", Runtime: "node", Interpreter: "node", Script: "node-fetch.mjs",
		Models: "Node's global fetch (the bundled undici)",
		Knobs: map[string]string{
			"keepalive":          "undici Agent pipelining (0 when false)",
			"idle_timeout":       "undici Agent keepAliveTimeout",
			"hint_buffer":        "undici Agent keepAliveTimeoutThreshold",
			"hint_max":           "undici Agent keepAliveMaxTimeout",
			"max_conns":          "undici Agent connections",
			"session_resumption": "undici connect.maxCachedSessions (0 when false)",
			"timeout":            "AbortSignal.timeout on each fetch",
			"caller_yields":      "await setImmediate between a response and the worker's next request",
		},
		Fixed: map[string]Fixed{
			"scheduling":       {"creation-order", "undici's Pool dispatches to the first free client in creation order (lib/dispatcher/pool.js)"},
			"http2":            {"never", "undici 6 offers only http/1.1 in ALPN (allowH2 is off)"},
			"keepalive_header": {"true", "undici sends Connection: keep-alive"},
			"honor_hint":       {"true", "undici always reads Keep-Alive: timeout=N"},
			"hint_parser":      {"undici", "undici reads the hint with timeout=(\\d+) anywhere in the value"},
			"liveness_check":   {"true", "undici drops an idle socket as soon as its FIN arrives"},
			"retry.attempts":   {"0", "fetch does not re-send a failed request"},
		},
		Probe: nodeProbe,
		Versions: "an undici release (7, 7.30 or 7.30.3): fetch and Agent come from the first undici package of that version found in " +
			"the directories $KALAB_UNDICI_PATH lists (npm install --prefix DIR undici@7), instead of the undici bundled with Node",
		versionForm: regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,2}$`),
	},
	"python-requests": {
		Name: "python-requests", Preset: "python-requests", Program: "requests", Runtime: "python3", Interpreter: "python3", Script: "python-requests.py",
		Models: "a requests.Session (urllib3's connection pool)",
		Knobs: map[string]string{
			"keepalive": "Connection: close on every request when false",
			"max_conns": "HTTPAdapter(pool_maxsize=N, pool_block=True)",
			"max_idle":  "HTTPAdapter(pool_maxsize=N)",
			"timeout":   "timeout= on each request (urllib3 applies it to connect and each read)",
		},
		Fixed: map[string]Fixed{
			"http2":            {"never", "urllib3 speaks HTTP/1.1 only"},
			"keepalive_header": {"true", "requests sends Connection: keep-alive"},
			"idle_timeout":     {"0s", "urllib3 has no idle timeout: a pooled connection stays until the server closes it"},
			"honor_hint":       {"false", "urllib3 ignores the Keep-Alive header"},
			"liveness_check":   {"true", "urllib3 checks is_connection_dropped before reusing a connection"},
			"scheduling":       {"lifo", "urllib3's pool is a LIFO queue"},
			"retry.attempts":   {"0", "requests' default HTTPAdapter is Retry(0, read=False)"},
		},
		Probe: []string{"-c", "import sys, requests, urllib3, ssl; print('python', sys.version.split()[0], 'requests', requests.__version__, 'urllib3', urllib3.__version__, 'openssl', ssl.OPENSSL_VERSION.split()[1])"},
	},
	"go-http": {
		Name: "go-http", Preset: "go-default", Program: "go", Runtime: "go", Interpreter: "go", Script: "go-http.go",
		Models: "Go's net/http: one http.Client over a Transport cloned from http.DefaultTransport (built with the go command on PATH)",
		Knobs: map[string]string{
			"keepalive":          "Transport.DisableKeepAlives (true when false)",
			"idle_timeout":       "Transport.IdleConnTimeout",
			"max_idle":           "Transport.MaxIdleConnsPerHost (kalab's 0, unlimited, as 1<<30: the Transport's 0 means 2)",
			"max_conns":          "Transport.MaxConnsPerHost",
			"session_resumption": "TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(0) when true",
			"timeout":            "http.Client.Timeout",
			"http2":              "Transport.Protocols: tls HTTP1+HTTP2 (ForceAttemptHTTP2's ALPN), always adds UnencryptedHTTP2, never HTTP1 only",
		},
		Fixed: map[string]Fixed{
			"keepalive_header": {"false", "Go's Transport sends no Connection header unless keep-alives are off (Connection: close)"},
			"honor_hint":       {"false", "Go's Transport does not read the Keep-Alive header (golang/go#15508; src/net/http/transport.go has no parser for it)"},
			"scheduling":       {"lifo", "Go's Transport reuses the most recently idled connection (src/net/http/transport.go queueForIdleConn: list[len(list)-1])"},
			"liveness_check":   {"true", "Go's Transport reads every idle connection (persistConn.readLoop): the server's FIN removes it from the pool (readLoopPeekFailLocked, errServerClosedIdle)"},
			"retry.attempts":   {"0", "http.Client re-sends nothing the caller sees; the Transport's own re-send of a replayable request on a reused connection (transport.go shouldRetryRequest) is hidden, and kalab counts it at the proxy (hidden_retries)"},
		},
		Build:   []string{"build", "-o"},
		Inherit: []string{"GOROOT", "GOPATH", "GOCACHE", "GOENV", "GOTOOLCHAIN", "GOMODCACHE", "GOPROXY", "GOSUMDB", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"},
		Probe:   []string{"version"},
		Versions: "a Go toolchain (go1.22.12): the go command on PATH (Go 1.21 or later) builds the adapter with it (GOTOOLCHAIN), " +
			"taking it from the Go module proxy the first time as it takes a module",
		versionForm: regexp.MustCompile(`^go1\.(2[1-9]|[3-9][0-9])\.[0-9]+$`),
	},
	"curl": {
		Name: "curl", Preset: "curl-multi", Program: "curl", Runtime: "curl", Interpreter: "bash", Script: "curl.sh",
		Models: "one curl process given every URL (curl URL URL ...), its connection cache",
		Knobs: map[string]string{
			"keepalive":          "Connection: close on every request when false",
			"timeout":            "--max-time",
			"session_resumption": "--no-sessionid when false",
		},
		Fixed: map[string]Fixed{
			"http2":            {"tls", "curl negotiates h2 by ALPN over TLS, and HTTP/1.1 over plain TCP"},
			"keepalive_header": {"false", "curl sends no Connection header"},
			"honor_hint":       {"false", "curl ignores the Keep-Alive header"},
			"idle_timeout":     {"1m58s", "curl's CURLOPT_MAXAGE_CONN (118 s) has no command-line option"},
			"liveness_check":   {"true", "curl checks a cached connection before reusing it"},
		},
		NoPause: true, Sequential: true,
		Probe: []string{"--version"},
	},
	"libcurl": {
		Name: "libcurl", Preset: "curl-multi", Program: "libcurl", Runtime: "python3", Interpreter: "python3", Script: "libcurl.py",
		Models: "libcurl (the library under the curl command) through Python's ctypes: one easy handle, its connection cache, pausing as the plan says",
		Knobs: map[string]string{
			"keepalive":          "Connection: close on every request when false",
			"idle_timeout":       "CURLOPT_MAXAGE_CONN (whole seconds)",
			"timeout":            "CURLOPT_TIMEOUT_MS",
			"session_resumption": "CURLOPT_SSL_SESSIONID_CACHE 0 when false",
		},
		Fixed: map[string]Fixed{
			"http2":            {"tls", "libcurl negotiates h2 by ALPN over TLS (CURL_HTTP_VERSION_2TLS), and HTTP/1.1 over plain TCP"},
			"keepalive_header": {"false", "libcurl sends no Connection header"},
			"honor_hint":       {"false", "libcurl ignores the Keep-Alive header"},
			"liveness_check":   {"true", "libcurl checks a cached connection before reusing it"},
		},
		Sequential: true, Inherit: []string{"KALAB_LIBCURL"},
		Probe: []string{"-", "--probe"}, ProbeScript: true,
		Versions: "a libcurl release (8.14.1): the first library that reports it among the files KALAB_LIBCURL lists, " +
			"/opt/kalab/libcurl-VERSION/usr/lib/*/libcurl.so.4 and the system's; none is not run, never another release",
		versionForm: regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`),
	},
	"chromium": {
		Name: "chromium", Preset: "chromium", Program: "chromium", Runtime: "chromium", Interpreter: "chromium",
		Models: "headless Chromium's fetch() over HTTP/3, QUIC forced on for the run's origin, driven over the DevTools pipe (HTTP/3 runs only)",
		Fixed: map[string]Fixed{
			"idle_timeout": {"30s", "Chromium's QUIC idle timeout is kIdleConnectionTimeout (net/quic/quic_context.h), with no switch"},
			"keepalive":    {"true", "Chromium keeps its QUIC connection for the origin"},
		},
		Native: true, Sequential: true,
		Probe: []string{"--version"},
	},
	"curl-loop": {
		Name: "curl-loop", Preset: "curl-loop", Program: "curl", Runtime: "curl", Interpreter: "bash", Script: "curl-loop.sh",
		Models: "a new curl process per request (a shell loop)",
		Knobs: map[string]string{
			"timeout": "--max-time",
		},
		Fixed: map[string]Fixed{
			"http2":            {"tls", "curl negotiates h2 by ALPN over TLS, and HTTP/1.1 over plain TCP"},
			"keepalive_header": {"false", "curl sends no Connection header"},
			"keepalive":        {"false", "a process per request never reuses a connection"},
		},
		Sequential: true,
		Probe:      []string{"--version"},
	},
}

// Lookup returns the bundled adapter with that name.
func Lookup(name string) (*Adapter, bool) {
	a, ok := adapters[name]
	return a, ok
}

// Names lists the bundled adapters, sorted.
func Names() []string {
	out := make([]string, 0, len(adapters))
	for n := range adapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// RefuseVersion says why the adapter cannot run version v (client.exec's version); "" when
// it can.
func (a *Adapter) RefuseVersion(v string) string {
	if a.Versions == "" {
		return fmt.Sprintf("the %s adapter runs one version, its runtime's own (the run record names it); go-http, node-fetch and libcurl take a version", a.Name)
	}
	if !a.versionForm.MatchString(v) {
		return fmt.Sprintf("%q is not a version the %s adapter takes: %s", v, a.Name, a.Versions)
	}
	return ""
}

// Refuse says why the adapter cannot run with client field field (a dotted path under
// client, such as retry.attempts) set to value (its canonical form); "" when it can.
func (a *Adapter) Refuse(field, value string) string {
	if requestFields[field] || Ignored[field] || field == "exec" {
		return ""
	}
	if _, ok := a.Knobs[field]; ok {
		return ""
	}
	if f, ok := a.Fixed[field]; ok {
		if f.Value == value {
			return ""
		}
		return fmt.Sprintf("the %s adapter cannot set it to %s: %s (it can only be %s)", a.Name, value, f.Why, f.Value)
	}
	return fmt.Sprintf("the %s adapter has no setting for it (it honours %s); remove it from exec runs", a.Name, a.knobList())
}

func (a *Adapter) knobList() string {
	names := make([]string, 0, len(a.Knobs))
	for k := range a.Knobs {
		names = append(names, k)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	if s == "" {
		return "no client field"
	}
	return s
}
