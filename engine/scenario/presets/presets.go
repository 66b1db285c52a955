// Package presets holds kalab's built-in settings as data: the defaults every run starts
// from, and the named presets that model real servers, clients, load balancers and
// middleboxes, each with the version it models and where its values come from. The
// scenario loader decodes them into its settings; this package knows YAML, not settings.
package presets

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Preset is a named starting point that models a real client or server. Its fields are YAML,
// decoded under the file's own values, so anything a scenario sets wins over the preset.
type Preset struct {
	Name   string
	Models string // the real thing and the version modelled
	Source string // where each default is written
	// Checked are the versions of real programs a truth file found the preset agrees with;
	// none when nothing checks it.
	Checked []Check
	// Verified is Checked in words, "PROGRAM VERSION WHAT on DATE by FILE" for each, joined
	// by "; "; written from Checked when the registry is built, "" when nothing checks it.
	Verified string
	YAML     string // the fields it sets, in scenario syntax
	// Releases are the releases that behave unlike YAML (which models the preset's default
	// release), chosen by client.version; none when every release it models behaves alike.
	Releases []Release
	// Ranges are all the releases a preset with Releases models, each From up to but not
	// including Before: a client.version outside them is refused, not given the default
	// rule (Release's YAML is empty here).
	Ranges []Release
	// Behaviours are what sets the preset apart from the others, each with the truth file
	// and the fault that guard it (behaviours.go); none for a preset without a list.
	Behaviours []Behaviour
	node       *yaml.Node
}

// Check is one version of a real program that a truth file ran beside the preset and found
// in agreement with it.
type Check struct {
	Program string // the program as its version line names it: node, undici, go, requests, curl, libcurl, nginx
	Version string // exactly as the program reports it: 6.24.1
	On      string // the date the truth file agreed, YYYY-MM-DD
	By      string // the truth file: scenarios/truth/NAME.yaml
	What    string // what was compared, written after PROGRAM VERSION with its own leading separator
}

// Release is a range of a program's releases, From up to but not including Before, whose
// behaviour differs from the preset's YAML, and the fields that differ.
type Release struct {
	From, Before string
	YAML         string // the fields that differ, decoded over the preset's
	node         *yaml.Node
}

// Decode decodes the preset's fields into dst, over what dst holds already.
func (p *Preset) Decode(dst any) error { return p.node.Decode(dst) }

// DecodeVersion decodes the preset's fields into dst and then those of the release range
// version lies in, if any.
func (p *Preset) DecodeVersion(version string, dst any) error {
	if err := p.Decode(dst); err != nil {
		return err
	}
	for _, r := range p.Releases {
		if CompareVersions(version, r.From) >= 0 && CompareVersions(version, r.Before) < 0 {
			return r.node.Decode(dst)
		}
	}
	return nil
}

// InRange says whether version lies in one of the preset's Ranges; true when it has none.
func (p *Preset) InRange(version string) bool {
	for _, r := range p.Ranges {
		if CompareVersions(version, r.From) >= 0 && CompareVersions(version, r.Before) < 0 {
			return true
		}
	}
	return len(p.Ranges) == 0
}

// RangesText lists the Ranges in words: "7.88.0 up to (not including) 9.0.0, ...".
func (p *Preset) RangesText() string {
	parts := make([]string, len(p.Ranges))
	for i, r := range p.Ranges {
		parts[i] = r.From + " up to (not including) " + r.Before
	}
	return strings.Join(parts, ", ")
}

// CompareVersions orders dotted release numbers (7.88.1 < 8.0.0, 8.9 < 8.14; a missing
// part is 0): -1, 0 or +1. A part that is not a number counts as 0.
func CompareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		x, y := 0, 0
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return cmp.Compare(x, y)
		}
	}
	return 0
}

// Defaults is what a scenario gets when neither it nor a preset sets a field.
var Defaults = builtin("defaults", defaultsYAML)

// BalancerDefaults is what a balancer section gets when neither it nor a preset sets a field.
var BalancerDefaults = builtin("balancer defaults", balancerDefaultsYAML)

// MiddleboxDefaults is what a middlebox section gets when neither it nor a preset sets a field.
var MiddleboxDefaults = builtin("middlebox defaults", middleboxDefaultsYAML)

// defaultsYAML is what a scenario gets when neither it nor a preset sets a field.
const defaultsYAML = `
time_scale: 1
network: {rtt: 0, jitter: 0, initial_window: 10, slow_start_after_idle: true, bandwidth: none, bandwidth_shared: false, loss: 0}
server:
  tls: false
  tls_version: "1.3"
  session_tickets: true
  http: "1.1"
  idle_timeout: 5s
  keepalive_hint: false
  hint_only_if_asked: false
  hint_countdown: false
  max_requests: 0
  close_every: 0
  http2_max_streams: 0
  zero_rtt: false
  backlog: 0
  accept_delay: 0
  backlog_overflow: drop
  response: {status: 200, body_bytes: 200, delay: 0}
client:
  implementation: model
  keepalive: true
  body_bytes: 0
  idle_timeout: none
  honor_hint: false
  hint_parser: node
  hint_buffer: 1s
  hint_max: none
  max_conns: 0
  max_idle: 0
  scheduling: lifo
  caller_yields: false
  drop_empty_pool: false
  liveness_check: true
  liveness_eof_only: false
  session_resumption: true
  tls_key_share: x25519
  http2: always
  quic: {keepalive_period: none, zero_rtt: "off"}
  keepalive_header: false
  timeout: 30s
  tcp_keepalive: {idle: none, interval: 75s, count: 9}
  method: GET
  path: /
  retry: {attempts: 0, on: [reset, eof], idempotent_only: true, reused_only: false, zero_bytes_only: false, hidden: false}
load: {requests: 100, concurrency: 1, burst: 0, pause: 0, rate: 0, arrival: uniform, seed: 1}
`

// Server presets model real servers. Values: docs/presets.md, from each project's source.
var Server = registry([]Preset{
	{
		Name:   "node",
		Models: "Node.js http.Server defaults (keepAliveTimeout 5000 ms) since nodejs/node#54863 (2024-09): Node 20.20.2 (read and run here) through nodejs/node main; no 20 vs 22 split",
		Source: "node lib/_http_server.js; the idle socket really closes about 1 s after keepAliveTimeout (socket.setTimeout(keepAliveTimeout + HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER), 1000, nodejs/node PR #54863, the same line in Node 20.20.2's own copy; measured 6,003 ms in keepalive-node-rtt-and-stale-race)",
		Checked: []Check{
			{Program: "node", Version: "20.20.2", On: "2026-12-02", By: "scenarios/truth/servers.yaml", What: " http.Server (closes at 6,000.6 ms against 6,001.2 modelled on 2026-12-01 with keepAliveTimeout set to 5000; left at its own default, which its log reports as 5000, it closed at 6,013.8 ms against 6,000.3 modelled; no Keep-Alive header of kalab's, Node's own)"},
		},
		YAML: "idle_timeout: 6s\nkeepalive_hint: 5s\nmax_requests: 0",
	},
	{
		Name:   "nginx",
		Models: "nginx 1.26 (keepalive_timeout 75s, keepalive_requests 1000 since 1.19.10)",
		Source: "nginx src/http/ngx_http_core_module.c; no Keep-Alive header unless keepalive_timeout has a second parameter",
		Checked: []Check{
			{Program: "nginx", Version: "1.22.1", On: "2026-12-02", By: "scenarios/truth/servers.yaml", What: ": the idle close with keepalive_timeout 2s (2,002.3 ms against 2,001.0 modelled) on 2026-12-01; at its own defaults (kalab writes neither keepalive_timeout nor keepalive_requests for the preset's values, and sets keepalive_time to a week) the close after the 1,000th request on a connection (2 connections for 1,001 back-to-back requests) and the absence of a Keep-Alive header (a client that drops any hint of 80 s or less keeps 1 connection); not compared: the 75 s idle close at the default (too slow for the bundled suite; the 2 s case compares the same directive), keepalive_time;"},
		},
		YAML: "idle_timeout: 75s\nkeepalive_hint: false\nmax_requests: 1000",
	},
	{
		Name:   "go",
		Models: "Go 1.26 net/http.Server with IdleTimeout and ReadTimeout unset",
		Source: "go src/net/http/server.go idleTimeout(): IdleTimeout, else ReadTimeout, else never",
		YAML:   "idle_timeout: none\nkeepalive_hint: false\nmax_requests: 0",
	},
	{
		Name:   "apache",
		Models: "Apache httpd 2.4 (KeepAliveTimeout 5, MaxKeepAliveRequests 100)",
		Source: "httpd include/httpd.h defaults; modules/http/http_protocol.c ap_set_keepalive: Keep-Alive only when the request sent the keep-alive token, max= counting down MaxKeepAliveRequests minus the keep-alive responses so far, and the connection kept while MaxKeepAliveRequests > keepalives, so 101 requests in all",
		YAML:   "idle_timeout: 5s\nkeepalive_hint: true\nhint_only_if_asked: true\nhint_countdown: true\nmax_requests: 101",
	},
	{
		Name:   "aws-alb",
		Models: "AWS Application Load Balancer, default 60 s idle timeout",
		Source: "AWS Elastic Load Balancing docs (connection idle timeout); sends no Keep-Alive hint",
		YAML:   "idle_timeout: 60s\nkeepalive_hint: false\nmax_requests: 0",
	},
})

// Client presets model real clients. Values: docs/presets.md, from each project's source.
var Client = registry([]Preset{
	{
		Name:   "node-agent",
		Models: "Node.js new https.Agent({keepAlive: true}) since the hint rule of nodejs/node#54863 (2024-09): Node 20.20.2 (read and run here) through nodejs/node main; no 20 vs 22 split",
		Source: "node lib/_http_agent.js keepSocketAlive, the same in Node 20.20.2's own copy and in nodejs/node main (where the 1,000 ms became the agentKeepAliveTimeoutBuffer option, default 1000, nodejs/node#59315); releases before #54863 used the hint whole and never refused a socket for it, which no preset models: agent timeout 0 (no idle timeout), hint read by ^timeout=(\\d+) minus 1000 ms (PR #54863) and used only when shorter than the agent timeout, so without one only a hint of 1 s or less matters (it stops pooling); lib/_http_client.js sends Connection: keep-alive; https.Agent offers only http/1.1 in ALPN; scheduling lifo, maxSockets Infinity, no retry; a free socket that gets the server's FIN leaves the pool at once (its 'close' handler), which the liveness check reproduces at reuse time; TCP keepalive: lib/_http_agent.js keepSocketAlive calls socket.setKeepAlive(true, this.keepAliveMsecs) when a socket goes back to the pool (keepAliveMsecs defaults to 1000, doc/api/http.md new Agent), and libuv's uv__tcp_keepalive (src/unix/tcp.c, libuv 1.46.0 in Node 20.20.2) sets TCP_KEEPIDLE to that delay in seconds, 'int intvl = 1; /* 1 second; same as default on Win32 */' and 'int cnt = 10'; measured here: Node 20.20.2's agent probed about once a second behind a middlebox (scenarios/truth/middlebox-keepalive.yaml)",
		Checked: []Check{
			{Program: "node", Version: "20.20.2", On: "2026-12-01", By: "scenarios/truth/node-agent.yaml", What: " https.Agent({keepAlive: true})"},
			{Program: "node", Version: "20.20.2", On: "2026-12-01", By: "scenarios/truth/middlebox-keepalive.yaml", What: " https.Agent({keepAlive: true}) behind a box that drops flows idle for 2.5 s: its TCP keepalive probes keep the flow (errors, connections and flows expired)"},
			{Program: "node", Version: "20.20.2", On: "2026-12-07", By: "scenarios/truth/deploys-h1.yaml", What: " https.Agent({keepAlive: true}) in the embedded server's reload race (a reload while a request is on the wire: 1 error, eof, and 2 connections)"},
		},
		YAML: "implementation: model\nkeepalive: true\nidle_timeout: none\nhonor_hint: true\nhint_parser: node\nhint_buffer: 1s\nscheduling: lifo\nmax_conns: 0\nliveness_check: true\nhttp2: never\nkeepalive_header: true\nretry: {attempts: 0}\ntcp_keepalive: {idle: 1s, interval: 1s, count: 10}",
	},
	{
		Name:   "node-agent-default",
		Models: "Node.js new https.Agent() (keepAlive defaults to false): Node 20.20.2 through nodejs/node main",
		Source: "node lib/_http_agent.js; doc/api/http.md new Agent([options]); no TCP keepalive: keepSocketAlive, which enables it, runs only for an agent with keepAlive",
		YAML:   "implementation: model\nkeepalive: false\nhttp2: never\nretry: {attempts: 0}\ntcp_keepalive: {idle: none}",
	},
	{
		Name:   "node-global-agent",
		Models: "Node.js 19+ global https agent (keepAlive true, scheduling lifo, timeout 5000 ms)",
		Source: "nodejs/node#48821 and the 19.0.0 changelog; hint rules as node-agent; TCP keepalive as node-agent (keepAliveMsecs 1000 on the global agent too)",
		YAML:   "implementation: model\nkeepalive: true\nidle_timeout: 5s\nhonor_hint: true\nhint_parser: node\nhint_buffer: 1s\nscheduling: lifo\nliveness_check: true\nhttp2: never\nkeepalive_header: true\nretry: {attempts: 0}\ntcp_keepalive: {idle: 1s, interval: 1s, count: 10}",
	},
	{
		Name:   "undici",
		Models: "undici (Node.js fetch) by release, client.version: 7.15.0 up to 8 (the default: undici 7 is what Node 24 LTS bundles; read and run in 7.30.3) and 6.14.1 up to 7 (client.version 6.x, Node 20's and 22's bundled fetch; read and run in 6.24.1): keepAliveTimeout 4 s, hint minus 2000 ms, keepAliveMaxTimeout 600 s, undici's creation-order Pool; in 7.x the Agent also closes the origin's Pool when its count of connected sockets falls to 0 (drop_empty_pool), so when the server closes connections (max_requests) an awaited loop opens a new connection for every request and closes it itself after one response, and a new Pool resumes no TLS session of the one before; not modelled (client.version refused): 7.0 to 7.14 (7.10 to 7.14 destroy the Pool instead of closing it) and undici 8 (Node 26, whose Agent keeps a Pool while a client of it is connecting or busy, nodejs/undici#5034)",
		Source: "undici lib/dispatcher/client.js and client-h1.js, docs/docs/api/Client.md (keepAliveTimeout, keepAliveTimeoutThreshold, keepAliveMaxTimeout); the threshold went from 1000 to 2000 ms in nodejs/undici#3145 (2024-04); read here in 6.24.1 (Node 20.20.2's fetch), 6.28.0 (npm's copy) and 7.30.2: keepAliveTimeout 4e3, keepAliveMaxTimeout 600e3, keepAliveTimeoutThreshold 2e3, pipelining 1, Pool connections unlimited, allowH2 false, the hint read by /timeout=(\\d+)/ with timeout - threshold <= 0 closing the socket, the same in all three; no retry unless RetryHandler is opted into; h2 only with allowH2 (off by default in 6 and 7); sends connection: keep-alive (lib/dispatcher/client-h1.js); scheduling creation-order is its Pool, read in 6.24.1: kGetDispatcher takes the first client in creation order whose needDrain is unset, else appends a new one (lib/dispatcher/pool.js); a client whose socket closed keeps its place and reconnects when a request reaches it (lib/dispatcher/client.js _resume calls connect; only a failed connect removes it, pool.js 'connectionError'); after a response, pipelining 1 makes onMessageComplete call setImmediate(() => client[kResume]()) (client-h1.js), so the client drains one tick later and the next request of an awaited loop goes to another client (caller_yields: true models a caller that yields that tick), while a failed request frees it at once (the socket's 'close' listener resumes it synchronously); a response that closes its socket (Connection: close, or a hint that leaves nothing to pool) makes onMessageComplete call util.destroy(socket, InformationalError('reset')) without resuming (client-h1.js), so the client drains only when the socket's 'close' listener resumes it, and Node emits 'close' from the handle's close callback (lib/net.js Socket.prototype._destroy, closeSocketHandle; Node 20.20.2), a later event-loop phase than the read: the next awaited request again goes to another client, and the one after reconnects in place; the Client of a response that closed its socket drains on the socket's 'close' event, which comes after a caller's setImmediate too (it runs in the check phase, before the close callbacks), so even a caller that yields sends the next request to another Client (measured with a Node http.Server and agent events, 6.24.1 and 7.30.3 alike); TCP keepalive: lib/core/connect.js buildConnector: socket.setKeepAlive(true, keepAliveInitialDelay), keepAliveInitialDelay default 60e3 (read in 7.30.3); interval 1 s and count 10 from libuv as node-agent; undici 7 (read in 7.30.3 as npm installs it, and in 7.10.0, 7.14.0 and 7.15.0): lib/dispatcher/agent.js [kDispatch], lines 90-125, keeps { count, dispatcher } per origin: the Pool's 'connect' adds one, its 'disconnect' takes one and, at zero or less, deletes the entry and calls the Pool's close() (closeClientIfUnused; since 7.15.0, nodejs/undici#4425: before it, 7.10.0 to 7.14.0 called destroy()), and the closures look the entry up by key, so a socket of a Pool already closed counts against its successor; pool.js's constructor builds each Pool's own connector and lib/core/connect.js buildConnector's SessionCache lives in it, so a new Pool starts with no TLS session; with the server closing after N requests the second Client's disconnect brings the count to zero while the first reconnects in place, that Client serves its request and closes (pool-base.js [kClose]), and its disconnect closes the Pool the next request made: every later request gets a new Pool and connection (engine/client/undiciagent)",
		Checked: []Check{
			{Program: "undici", Version: "6.24.1", On: "2026-12-01", By: "scenarios/truth/undici.yaml", What: " (Node 20.20.2's fetch), comparing the connections of 8 awaited back-to-back requests (2) and of a caller that yields a tick between them (1); in the stale race (bursts of 5 awaited requests, seeded pauses) at 50 and 150 ms RTT the errors, connections and failing bursts together, which must be one of the outcomes the preset's pool reaches over the seeded pauses when each idle gap may be longer by what real fetch measured around its requests (plan_reaches: exact for every burst whose gaps lie beyond that slack of a race edge), and the preset's own run the plan's one outcome; the connections when a Keep-Alive hint minus the 2 s threshold leaves nothing to pool; not compared: the 4 s keepAliveTimeout and keepAliveMaxTimeout (no case idles that long), hints longer than the threshold, concurrency above 1, request bodies, TLS resumption; by hand with examples/undici-race.yaml (300 requests, bursts of 10, pauses 1.5-2.5 s; 2026-12-02): connections, errors and failing bursts equal in every race at 50 ms RTT (seeds 1-6) and in 5 of 6 seeds at 150 ms, the other differing where the preset's pauses came within 5 ms of the race's edge; the pool was read in 6.24.1,"},
			{Program: "undici", Version: "6.24.1", On: "2026-12-05", By: "scenarios/truth/undici.yaml", What: " (Node 20.20.2's fetch), the connections of 40 awaited requests when the server closes after N requests (max_requests 5: 8, 4: 10)"},
			{Program: "undici", Version: "7.30.3", On: "2026-12-05", By: "scenarios/truth/undici-7.yaml", What: " from npm under Node 20.20.2 (its fetch and Agent in place of the bundled ones): the same cases, races included (their errors, connections and failing bursts one of the outcomes the preset's pool reaches at the slack undici 7 measured, plan_reaches; equal to the preset's nominal 12 connections and 1 error at 50 ms RTT, 15 and 2 at 150 ms, in three runs of 2026-12-05), its pool.js dispatch and client-h1.js release read the same; new in 7, a check of an idle socket one event-loop turn before a request is written on it, changed no count here"},
			{Program: "undici", Version: "6.24.1", On: "2026-12-07", By: "scenarios/truth/undici.yaml", What: " (Node 20.20.2's fetch) at client.version 6.24.1: the connections of awaited requests with the server closing after N, 40 at N = 6 (8), 20 at N = 2 (10) and 30 at N = 7 with a caller that yields (5), and TLS resumption after pauses the server's idle timeout ends (3 of 4)"},
			{Program: "undici", Version: "7.30.3", On: "2026-12-07", By: "scenarios/truth/undici-7.yaml", What: " at client.version 7.30.3 (the Agent's count): the same cases, 30, 18 and 24 connections, and 0 of 4 resumed"},
			{Program: "undici", Version: "6.24.1", On: "2026-12-07", By: "scenarios/truth/undici-edges.yaml", What: " (Node 20.20.2's fetch): reconnecting in place (a server closing after 2 requests, bursts of 3: 6 connections for 12 requests), the 2 s hint threshold (a 2 s hint pools nothing: 6 connections for 6 requests 300 ms apart) and TLS resumption (3 of 4 new connections resumed), and its own 4 s keepAliveTimeout (a connection idle 6 s closed by the client)"},
			{Program: "undici", Version: "7.30.3", On: "2026-12-07", By: "scenarios/truth/undici-7-edges.yaml", What: " (the undici package from $KALAB_UNDICI_PATH under Node 20.20.2): reconnecting in place, the 2 s hint threshold and its own 4 s keepAliveTimeout, the same cases as undici-edges.yaml"},
		},
		YAML: "implementation: model\nkeepalive: true\nidle_timeout: 4s\nhonor_hint: true\nhint_parser: undici\nhint_buffer: 2s\nhint_max: 600s\nscheduling: creation-order\ndrop_empty_pool: true\nliveness_check: true\nhttp2: never\nkeepalive_header: true\nretry: {attempts: 0}\ntcp_keepalive: {idle: 60s, interval: 1s, count: 10}",
		// The YAML models 7.15.0 up to 8; client.version 6.x turns the Agent's count off.
		Releases: []Release{{From: "6.14.1", Before: "7.0.0", YAML: "drop_empty_pool: false"}},
		Ranges:   []Release{{From: "6.14.1", Before: "7.0.0"}, {From: "7.15.0", Before: "8.0.0"}},
	},
	{
		Name:   "go-default",
		Models: "Go 1.22 through 1.26 net/http.DefaultTransport (IdleConnTimeout 90 s, MaxIdleConnsPerHost 2)",
		Checked: []Check{
			{Program: "go", Version: "1.26.8", On: "2026-12-02", By: "scenarios/truth/go.yaml", What: " net/http (the go-http adapter: an http.Client over a Transport cloned from DefaultTransport, nothing else set): reuse, the stale race (4 hidden re-sends and 4 failed attempts of 5 requests, no error), a FIN first, TLS resumption (0 of 4 at the defaults, 4 of 4 with a ClientSessionCache), the ignored Keep-Alive hint, MaxIdleConnsPerHost 2 under 4 concurrent requests (8 connections for 3 bursts) and a re-sent request's latency; not compared: the 90 s IdleConnTimeout (no case idles that long), TCP keepalive, HTTP/2, request bodies and non-idempotent methods, which requests reuse under the dial race (reused_requests varies from run to run in both),"},
			{Program: "go", Version: "1.26.8", On: "2026-12-07", By: "scenarios/truth/deploys-h1.yaml", What: " net/http (the go-http adapter) in the embedded server's reload race over HTTP/1.1: the GET re-sent unseen (1 hidden re-send, 1 failed attempt, no error, 2 connections)"},
			{Program: "go", Version: "1.26.8", On: "2026-12-07", By: "scenarios/truth/deploys-h2.yaml", What: " net/http (the go-http adapter, HTTP/2 over TLS) against the embedded server's GOAWAY: 10 streams on the wire re-sent on 10 new connections (no error, 20 connections, the re-sent requests' latency), a GOAWAY after they arrived (10 connections), and a drain whose re-sends' connects fail (10 errors, none of them the GOAWAY's)"},
			{Program: "go", Version: "1.22.12", On: "2026-12-05", By: "scenarios/truth/go-1.22.yaml", What: " (the adapter built by that toolchain; transport.go's shouldRetryRequest, isReplayable and readLoopPeekFailLocked read the same in 1.22.12 and 1.26.8): the same cases, every compare equal"},
		},
		Source: "go src/net/http/transport.go DefaultTransport; the hint is not read (golang/go#15508); hidden re-sends come from shouldRetryRequest; h2 by ALPN over TLS only (h2c needs Protocols.SetUnencryptedHTTP2); no ClientSessionCache in the default TLS config, so no resumption; TCP keepalive: DefaultTransport dials with net.Dialer{KeepAlive: 30 * time.Second} (src/net/http/transport.go), and net.newTCPConn turns that into KeepAliveConfig{Enable: true, Idle: 30s}, whose zero Interval and Count mean 15 s and 9 (src/net/tcpsock.go KeepAliveConfig; src/net/dial.go defaultTCPKeepAliveInterval, defaultTCPKeepAliveCount), read in Go 1.26.8 here; a plain net.Dialer{} uses 15 s idle (defaultTCPKeepAliveIdle)",
		YAML:   "implementation: go-net-http\nkeepalive: true\nidle_timeout: 90s\nmax_idle: 2\nhonor_hint: false\nhttp2: tls\nsession_resumption: false\nretry: {attempts: 0}\ntcp_keepalive: {idle: 30s, interval: 15s, count: 9}",
	},
	{
		Name:   "python-requests",
		Models: "requests 2.32 on urllib3 2.x: no idle timeout, pool of 10 per host, drops connections seen dead before reuse",
		Source: "requests adapters.py (max_retries Retry(0, read=False)), utils.py default_headers (Connection: keep-alive); urllib3 connectionpool.py is_connection_dropped; HTTP/1.1 only; requests 2.34.2 measured here resumed 0 TLS sessions; no TCP keepalive: urllib3 HTTPConnection.default_socket_options is [(IPPROTO_TCP, TCP_NODELAY, 1)] only (printed from urllib3 2.7.0 here)",
		Checked: []Check{
			{Program: "requests", Version: "2.34.2", On: "2026-12-01", By: "scenarios/truth/python-requests.yaml", What: " with urllib3 2.7.0 (Python 3.11): reuse, the stale race, a FIN first and the hint"},
			{Program: "requests", Version: "2.34.2", On: "2026-12-02", By: "scenarios/truth/python-requests.yaml", What: " with urllib3 2.7.0 (Python 3.11): TLS resumption (0 of 8)"},
		},
		YAML: "implementation: model\nkeepalive: true\nidle_timeout: none\nhonor_hint: false\nmax_idle: 10\nliveness_check: true\nscheduling: lifo\nhttp2: never\nkeepalive_header: true\nsession_resumption: false\nretry: {attempts: 0}\ntcp_keepalive: {idle: none}",
	},
	{
		Name:   "curl-loop",
		Models: "curl 7.88-8.x, one process per request (a shell loop): never reuses",
		Source: "curl docs/cmdline-opts/_URL.md: connections and TLS sessions are reused only within one invocation; h2 by ALPN over TLS by default since 7.62; TCP keepalive: the curl tool sets CURLOPT_TCP_KEEPALIVE unless --no-keepalive, with --keepalive-time (default 60) as TCP_KEEPIDLE and TCP_KEEPINTVL (docs/cmdline-opts/keepalive-time.md; CURLOPT_TCP_KEEPIDLE and CURLOPT_TCP_KEEPINTVL default 60); count is Linux's tcp_keepalive_probes 9 before curl 8.9's --keepalive-cnt",
		Checked: []Check{
			{Program: "curl", Version: "7.88.1", On: "2026-12-01", By: "scenarios/truth/curl.yaml", What: ""},
		},
		YAML: "implementation: model\nkeepalive: false\nhttp2: tls\nsession_resumption: false\nretry: {attempts: 0}\ntcp_keepalive: {idle: 60s, interval: 60s, count: 9}",
	},
	{
		Name:   "curl-multi",
		Models: "curl 7.88-8.x, one process with many URLs: reuse, max idle age 118 s, a pooled connection with unread input (a TLS close_notify) dropped before reuse as in curl 8.0.0 and later (client.version 7.88.0 or 7.88.1: taken for alive and reused), silent re-send on a fresh connection when a reused one died with 0 bytes received (up to 5 times, any method)",
		Source: "curl lib/url.c (CURLOPT_MAXAGE_CONN default 118 s, the liveness check before reuse), lib/transfer.c Curl_retry_request (a re-send on a dead reused connection, invisible to the caller); the liveness check by release: up to 7.87.0 lib/url.c SocketIsDead called a pooled connection dead whenever its socket was readable; 7.88.0 moved the check into the connection filters (commit 71b7e01, lib/cfilters.c Curl_conn_is_alive), which take a readable connection whose peek finds bytes, such as the server's TLS close_notify, for alive, whatever the TLS library (OpenSSL and GnuTLS builds of 7.88.1 measured alike here), so 7.88.0 and 7.88.1 reuse a connection the server closed and re-send into it; 8.0.0 (2023-03-20) drops a pooled connection with input pending (commit 7c5637b, curl/curl#10690 'url: fix logic in connection reuse to deny reuse on \"unclean\" connections', 2023-03-07: Curl_conn_is_alive reports input_pending and lib/url.c treats it as dead; OpenSSL's check_cxn removed), as lib/url.c Curl_conn_seems_dead still does; real curl 7.88.1 here re-sent 15-21 times per 300 stale-race requests over TLS and 0 over plain HTTP; TCP keepalive as curl-loop",
		Checked: []Check{
			{Program: "curl", Version: "7.88.1", On: "2026-12-01", By: "scenarios/truth/curl.yaml", What: " (one process, no pauses: errors and connections)"},
			{Program: "libcurl", Version: "7.88.1", On: "2026-12-05", By: "scenarios/truth/libcurl.yaml", What: " through the libcurl adapter at client.version 7.88.1 (the stale race with pauses, over TLS, before and after the close_notify arrived: hidden re-sends, errors, connections and latency)"},
			{Program: "libcurl", Version: "8.14.1", On: "2026-12-05", By: "scenarios/truth/libcurl.yaml", What: " through the libcurl adapter at the default (the same cases: no re-send once the close_notify arrived)"},
		},
		YAML:     "implementation: model\nkeepalive: true\nidle_timeout: 118s\nhonor_hint: false\nliveness_check: true\nliveness_eof_only: false\nhttp2: tls\nretry: {attempts: 5, on: [reset, eof], idempotent_only: false, reused_only: true, zero_bytes_only: true, hidden: true}\ntcp_keepalive: {idle: 60s, interval: 60s, count: 9}",
		Releases: []Release{{From: "7.88.0", Before: "8.0.0", YAML: "liveness_eof_only: true"}},
		// From CURLOPT_MAXAGE_CONN (118 s by default; its man page: "Added in 7.65.0"); up to
		// 7.87.0 the liveness check was lib/url.c's SocketIsDead, readable meaning dead, the
		// default's rule. curl 9 is not released.
		Ranges: []Release{{From: "7.65.0", Before: "9.0.0"}},
	},
	{
		Name:   "chromium",
		Models: "Chromium's HTTP/3 (QUIC) client, Chromium 156: max_idle_timeout 30 s, no PING while the connection is idle, 0-RTT on a resumed connection for safe methods (GET, HEAD) only, one connection per origin; not modelled: Chromium's PING every 15 s while a request is outstanding (the model sends none; a run whose request is still waiting at 15 s on a path that forgot the connection first, a long poll behind a NAT, has no verdict and says so)",
		Source: "chromium net/quic/quic_context.h: kIdleConnectionTimeout = base::Seconds(30), advertised by quic_context.cc SetIdleNetworkTimeout; google/quiche quic_constants.h kPingTimeoutSecs = 15, and quic_ping_manager.cc sends it only when the application says so ('Don't send a ping unless the application (ie: HTTP/3) says to'), which HTTP/3 does while streams are open (quic_spdy_session.cc); net/http/http_network_transaction.cc sets can_send_early_data_ from HttpUtil::IsMethodSafe, passed on by quic_http_stream.cc; QuicParams: migrate_idle_sessions false; no TCP keepalive: QUIC runs on UDP",
		Checked: []Check{
			{Program: "chromium", Version: "156.0.8078.114", On: "2026-12-05", By: "scenarios/truth/chromium.yaml", What: " (Debian's, headless, QUIC forced on for the origin, fetch() from a page of it): the connections and errors of requests after pauses longer than the negotiated idle timeout (server 5 s), than Chromium's own 30 s (server 60 s, a 33 s pause), and behind a NAT that forgets the flow after 10 s (a 15 s pause: one rebinding, one path migration, the same connection); not compared here: 0-RTT (Chromium sends a GET as 0-RTT on a resumed connection and holds a POST for the handshake, engine/internal/chromeh3's tests) and the PING every 15 s while a request is open, which the preset does not model"},
			{Program: "chromium", Version: "156.0.8078.129", On: "2026-12-07", By: "scenarios/truth/chromium-zero-rtt.yaml", What: " (Debian's, headless): 0-RTT on a resumed connection for a GET (1 request in 0-RTT, counted by the server) and not for a POST (0)"},
			{Program: "chromium", Version: "156.0.8078.129", On: "2026-12-07", By: "scenarios/truth/chromium.yaml", What: " (Debian's, headless): TLS resumption, counted by kalab's server (Chromium does not report it): each new connection resumes the session of an earlier one, 2 of 3 after 7 s pauses, 1 of 2 after a 33 s pause"},
		},
		YAML: "implementation: model\nkeepalive: true\nidle_timeout: 30s\nsession_resumption: true\nquic: {keepalive_period: none, zero_rtt: safe}\nretry: {attempts: 0}\ntcp_keepalive: {idle: none}",
	},
	{
		Name:   "quic-go-http3",
		Models: "quic-go v0.65.0's http3.Transport with no QUIC config and no TLS session cache: max_idle_timeout 30 s, a keep-alive PING after 10 s without a packet (at most half the idle timeout), no session resumption and so no 0-RTT (it sends 0-RTT only for the GET_0RTT method)",
		Source: "quic-go v0.65.0 internal/protocol/params.go DefaultIdleTimeout = 30 * time.Second; http3/client.go defaultQuicConfig KeepAlivePeriod: 10 * time.Second, applied by http3/transport.go when QUICConfig is nil; connection.go keepAliveInterval = min(KeepAlivePeriod, idleTimeout/2); http3/client.go MethodGet0RTT; no TCP keepalive: QUIC runs on UDP",
		YAML:   "implementation: model\nkeepalive: true\nidle_timeout: 30s\nsession_resumption: false\nquic: {keepalive_period: 10s, zero_rtt: \"off\"}\nretry: {attempts: 0}\ntcp_keepalive: {idle: none}",
	},
})

// balancerDefaultsYAML is what a balancer section gets when neither it nor a preset sets a
// field: a generic proxy with the ALB's 60 s on both sides and an immediate 502.
const balancerDefaultsYAML = `
idle_timeout: 60s
backend_network: {rtt: 0, jitter: 0, initial_window: 10, slow_start_after_idle: true, bandwidth: none, bandwidth_shared: false, loss: 0}
backend: {keepalive: true, idle_timeout: 60s, max_idle: 0, max_conns: 0, scheduling: lifo, liveness_check: true, timeout: 30s}
on_backend_error: error
retries: 1
error_status: 502
reuse: always
deregistration_delay: 0s
`

// Balancer presets model real load balancers and reverse proxies, each value checked against
// the vendor's documentation or source (cited in Source).
var Balancer = registry([]Preset{
	{
		Name:   "aws-alb",
		Models: "AWS Application Load Balancer: connection idle timeout 60 s on the client and the target side, 502 when the target closed the connection",
		Source: "AWS ELB docs, Application Load Balancers, 'Edit attributes' > 'Connection idle timeout': 'an existing client or target connection', default 60 seconds; 'configure the idle timeout of your application to be larger than the idle timeout configured for the load balancer. Otherwise ... the load balancer might send a request to the application before it receives the packet indicating that the connection is closed ... then the load balancer sends an HTTP 502 Bad Gateway error to the client' (so a FIN that already arrived is honoured: liveness_check true); no Keep-Alive hint; 'Edit target group attributes' > 'Deregistration delay' (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-target-group-attributes.html#deregistration-delay): 'Elastic Load Balancing stops sending requests to targets that are deregistering. By default, Elastic Load Balancing waits 300 seconds before completing the deregistration process, which can help in-flight requests to the target to complete'; 'If a deregistering target has no in-flight requests and no active connections, Elastic Load Balancing immediately completes the deregistration process'; 'If a deregistering target terminates the connection before the deregistration delay elapses, the client receives a 500-level error response' (deregistration_delay 300s)",
		YAML:   "idle_timeout: 60s\nbackend: {keepalive: true, idle_timeout: 60s, max_idle: 0, scheduling: lifo, liveness_check: true}\non_backend_error: error\nerror_status: 502\nreuse: always\nderegistration_delay: 300s",
	},
	{
		Name:   "nginx-proxy",
		Models: "nginx 1.26 proxy_pass to an upstream with keepalive: client keepalive_timeout 75 s, upstream keepalive_timeout 60 s, proxy_next_upstream error timeout (non-idempotent requests not re-sent since 1.9.13)",
		Checked: []Check{
			{Program: "nginx", Version: "1.22.1", On: "2026-12-07", By: "scenarios/truth/chain-nginx-haproxy.yaml", What: " as the first balancer of a chain, in front of HAProxy over a 200 ms link: a cached upstream connection HAProxy had closed re-sent for a GET (500 ms against 400 ms for a new connection after the close) and answered 502 for a POST, one new upstream connection after each race or close (4); not compared: the 75 s and 60 s defaults (the file sets its own timeouts), a FIN seen on a cached connection before reuse against one in flight (only through the latency), max_idle, several upstream servers"},
		},
		Source: "nginx docs: ngx_http_core_module keepalive_timeout default 75s; ngx_http_upstream_module keepalive_timeout default 60s (1.15.3), keepalive has no default (16 is the docs' example); ngx_http_proxy_module proxy_next_upstream default 'error timeout', non_idempotent: 'requests with a non-idempotent method (POST, LOCK, PATCH) are not passed to the next server if a request has been sent to an upstream server (1.9.13)' (CHANGES 1.9.13); src/http/ngx_http_upstream.c ngx_http_upstream_next: 'if (u->peer.cached && ft_type == NGX_HTTP_UPSTREAM_FT_ERROR) u->peer.tries++', so with one server only a cached connection's failure is re-sent; the keepalive module closes a cached connection on its read event (a FIN that arrived) and reuses the cache head (lifo); answers 502 when no try is left; measured against nginx 1.22.1 in engine/balancer TestNginxPolicyMatchesRealNginx (GET and PUT re-sent, POST 502); deregistration_delay is left 0: nginx has no deregistration delay of its own (a server leaves an upstream with a reload), so set it to how long your deploy waits before it stops the old backend",
		YAML:   "idle_timeout: 75s\nbackend: {keepalive: true, idle_timeout: 60s, max_idle: 16, scheduling: lifo, liveness_check: true}\non_backend_error: retry_idempotent\nretries: 16\nerror_status: 502\nreuse: always",
	},
	{
		Name:   "haproxy",
		Models: "HAProxy 2.6 in mode http with its defaults: http-reuse safe, retry-on conn-failure only (an established connection that dies is not re-sent); a reused server connection that dies under a later request closes the client connection without a response, a first request's fresh one gets 502",
		Checked: []Check{
			{Program: "haproxy", Version: "2.6.12", On: "2026-12-07", By: "scenarios/truth/chain-nginx-haproxy.yaml", What: " (Debian's 2.6.12-1+deb12u4) as the second balancer of a chain, behind nginx: the client-facing idle close (timeout http-keep-alive 2 s) that nginx's requests race, and http-reuse safe (a new server connection for each new client connection: 4 to the server); not compared: a dying server connection (the server behind it keeps its connections 65 s), pool-purge-delay's idle purge (the file keeps server connections a day)"},
		},
		Source: "HAProxy configuration manual: 'http-reuse safe: ... the recommended strategy. The first request of a session is always sent over its own connection, and only subsequent requests may be dispatched over other existing connections. This ensures that in case the server closes the connection when the request is being sent, the browser can decide to silently retry it'; measured against HAProxy 2.6.12 (Debian 12) in engine/balancer TestHAProxyPolicyMatchesRealHAProxy: client connection closed with no response on a reused server connection, 502 on a fresh one; rates measured on 2026-12-01 (2 vCPUs, load average 10-16 from other work): with the server resetting every reused connection after the first client connection's requests, HAProxy closed the client connection in 300 of 300 GETs and 300 of 300 POSTs, and never re-sent (the server saw 4 requests in each try); with only the second client connection's own server connection dying, HAProxy sent that client's second request over the first client's idle server connection instead in 11 of 1,400 tries (GET 4 of 700, POST 7 of 700), so no connection died under it and it got a 200 - a choice of idle connection the preset does not model (it reuses the most recent), not a re-send; 'timeout http-keep-alive' has no default (falls back to timeout http-request, then timeout client): 10 s here is a common setting, not a default, so set yours; retries 3 with retry-on conn-failure by default (an established connection that dies is not re-sent); pool-purge-delay (5 s by default, from memory of the manual and a third-party test script: not re-checked here) closes half of the unused idle server connections every interval, approximated as a 5 s backend idle timeout; deregistration_delay is left 0: HAProxy has no deregistration delay of its own (a server is drained or put in maintenance by its operator), so set it to how long your deploy waits before it stops the old backend",
		YAML:   "idle_timeout: 10s\nbackend: {keepalive: true, idle_timeout: 5s, max_idle: 0, scheduling: lifo, liveness_check: true}\non_backend_error: close\nerror_status: 502\nreuse: safe",
	},
	{
		Name:   "gcp-alb",
		Models: "Google Cloud's global external Application Load Balancer (its Google Front Ends): client HTTP keep-alive 610 s, backend keep-alive 600 s (fixed), 502 when the backend closed the connection",
		Source: "Google Cloud docs, 'Request distribution for external Application Load Balancers' (https://cloud.google.com/load-balancing/docs/https/request-distribution): the GFE's client HTTP keepalive timeout is 610 seconds and its default backend keepalive timeout 600 seconds; the client one can be changed (TargetHttpProxy.httpKeepAliveTimeoutSec, 5-1,200 s for the global load balancer), the backend one cannot; 'Timeouts and retries' (quoted in jetty-users, 2023): 'The backend keepalive timeout is fixed at 10 minutes (600 seconds) and cannot be changed. The load balancer's backend keepalive timeout should be less than the keepalive timeout used by software running on your backends ... you must configure your backend software so that its HTTP keepalive (TCP idle) timeout value is greater than 600 seconds'; a backend that closes first gives 502 with statusDetails backend_connection_closed_before_data_sent_to_client (troubleshooting guide; the jetty-users report). Whether the GFE re-sends a request that met a closed backend connection is not documented where this was checked: none is modelled (retries 0), which is what the 502s users report show. deregistration_delay is left 0: the backend service's connection draining timeout (0-3,600 s, 0 disables it) has no default that a source here states, so set yours",
		YAML:   "idle_timeout: 610s\nbackend: {keepalive: true, idle_timeout: 600s, max_idle: 0, scheduling: lifo, liveness_check: true}\non_backend_error: error\nretries: 0\nerror_status: 502\nreuse: always",
	},
	{
		Name:   "ingress-nginx",
		Models: "the Kubernetes ingress-nginx controller with its ConfigMap defaults: client keep-alive 75 s, upstream keepalive 60 s with 320 idle connections, proxy-next-upstream 'error timeout' (a GET that met a closed upstream connection re-sent, a POST answered 502)",
		Source: "kubernetes/ingress-nginx internal/ingress/controller/config/config.go NewDefault(): KeepAlive 75, UpstreamKeepaliveConnections 320, UpstreamKeepaliveTimeout 60, UpstreamKeepaliveRequests 10000, UpstreamKeepaliveTime '1h', ProxyNextUpstream 'error timeout', ProxyNextUpstreamTries 3 (written into nginx.conf as keepalive_timeout, keepalive, keepalive_timeout in the upstream block, proxy_next_upstream and proxy_next_upstream_tries). The rest is nginx's, as the nginx-proxy preset (measured against nginx 1.22.1): non-idempotent requests are not passed to the next server once sent (1.9.13), a cached connection's failure is re-sent, a FIN that arrived on a cached connection is seen (liveness_check), the most recent cached connection is reused (lifo). retries 3 is proxy-next-upstream-tries, a bound on the tries that this preset approximates as three re-sends; ingress-nginx's Lua balancer between nginx and the pods was not run here",
		YAML:   "idle_timeout: 75s\nbackend: {keepalive: true, idle_timeout: 60s, max_idle: 320, scheduling: lifo, liveness_check: true}\non_backend_error: retry_idempotent\nretries: 3\nerror_status: 502\nreuse: always",
	},
	{
		Name:   "envoy",
		Models: "Envoy 1.3x HTTP connection manager and cluster: idle_timeout 1 h on both sides, no retry policy unless a route sets one, 503 on an upstream reset before headers",
		Source: "Envoy docs, FAQ 'How do I configure timeouts?': the HTTP protocol idle_timeout 'is defined in a generic message used by both the HTTP connection manager as well as upstream cluster HTTP connections ... The default idle timeout if not otherwise specified is 1 hour'; retries come from a route's retry_policy (none by default); the local reply is 503 'upstream connect error or disconnect/reset before headers' (response flag UC, envoyproxy/envoy#14981); deregistration_delay is left 0: Envoy has no deregistration delay of its own, so set it to how long your deploy waits before it stops the old backend",
		YAML:   "idle_timeout: 1h\nbackend: {keepalive: true, idle_timeout: 1h, max_idle: 0, scheduling: lifo, liveness_check: true}\non_backend_error: error\nretries: 0\nerror_status: 503\nreuse: always",
	},
})

func registry(list []Preset) map[string]*Preset {
	m := make(map[string]*Preset, len(list))
	for i := range list {
		p := list[i]
		p.node = mustNode(p.Name, p.YAML)
		p.Verified = verifiedText(p.Checked)
		p.Releases = slices.Clone(p.Releases)
		for j := range p.Releases {
			r := &p.Releases[j]
			r.node = mustNode(p.Name+" "+r.From, r.YAML)
		}
		m[p.Name] = &p
	}
	return m
}

// builtin is built-in YAML that is not a named preset (the defaults of a section).
func builtin(name, src string) *Preset {
	return &Preset{Name: name, YAML: src, node: mustNode(name, src)}
}

func mustNode(name, src string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		panic(fmt.Sprintf("presets: built-in %s is not valid YAML: %v", name, err))
	}
	return doc.Content[0]
}

// Names returns the names in a registry, sorted.
func Names(reg map[string]*Preset) []string {
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
