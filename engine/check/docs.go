package check

import (
	"fmt"
	"slices"
	"strings"
)

// MetricDoc says what one metric means and in which unit, for `kalab help metrics`, the
// metric reference (docs/reference/metrics.md) and the descriptions in schema/result.schema.json.
type MetricDoc struct {
	Name    string // dotted, as expressions write it
	Unit    string
	Meaning string
}

// Docs is the one place a metric is described; a test keeps it, the Metrics struct, the
// result schema and docs/reference/metrics.md in step. Adding a metric is one line here, in the order
// `kalab help metrics` prints.
var Docs = []MetricDoc{
	{"requests", "requests", "requests the client sent (each counted once, however many attempts it took)"},
	{"ok", "requests", "requests that got an HTTP response"},
	{"errors", "requests", "requests that failed after every attempt (requests - ok)"},
	{"errors_per_1000", "per 1,000 requests", "errors scaled to 1,000 requests"},
	{"errors_by_class.reset", "requests", "failed with a connection reset (ECONNRESET, EPIPE)"},
	{"errors_by_class.eof", "requests", "failed because the server closed the connection before answering (EOF)"},
	{"errors_by_class.timeout", "requests", "failed when client.timeout passed, a connect still retrying a dropped SYN (a full listen queue) included"},
	{"errors_by_class.refused", "requests", "failed because the connection was refused"},
	{"errors_by_class.tls", "requests", "failed in the TLS handshake"},
	{"errors_by_class.other", "requests", "failed for any other reason"},
	{"retries", "attempts", "visible retries: attempts beyond the first, from client.retry"},
	{"hidden_retries", "attempts", "re-sends a client made on its own without reporting them: traced in kalab's clients (Go's Transport, a model with hidden retries); for a real client program, a request the server received twice plus failed_attempts the program reported neither as a reset or eof error nor as a retry"},
	{"failed_attempts", "attempts", "requests the client wrote into a connection after the server had closed it, so they never reached the server, as the proxy saw them on its upstream side (any client, real programs included; 0 with no link in front of the server, or with a balancer)"},
	{"connections", "connections", "connections the client opened"},
	{"server_connections", "connections", "connections the server accepted"},
	{"proxy_connections", "connections", "connections through the latency proxy (0 with rtt 0 and no jitter: no proxy)"},
	{"bytes_up", "bytes", "bytes the link delivered from client to server, headers and request bodies (0 without a link)"},
	{"bytes_down", "bytes", "bytes the link delivered from server to client (0 without a link)"},
	{"syn_retried_connects", "requests", "requests whose new connection connected only after the client's kernel retried a dropped SYN (a full listen queue): a connect of 1 s or more in real time"},
	{"failed_bursts", "bursts", "bursts (load.burst requests each; the whole run when 0) in which at least one request failed"},
	{"failed_bursts_mask", "bit set", "which bursts had a failed request: bit b (value 2^b) is set for burst b, 0-based, for the first 53 bursts; two runs with equal masks failed in the same bursts"},
	{"listen_overflows", "connections", "connections reset because the listen queue was full (server.backlog_overflow: refuse); dropped SYNs show as connect timeouts instead"},
	{"reused_requests", "requests", "requests whose final attempt went out on a reused connection"},
	{"reuse_ratio", "ratio 0-1", "reused_requests / requests"},
	{"tls_handshakes", "handshakes", "TLS handshakes, as kalab's server counts them (kalab's own client's count where the server is a real program, and over HTTP/3; never a real client's against a real server)"},
	{"tls_resumed", "handshakes", "of those, resumed from a session ticket (for Chromium, kalab's HTTP/3 server's count)"},
	{"latency_ms.min", "ms", "fastest request, failed ones included"},
	{"latency_ms.p50", "ms", "median request latency"},
	{"latency_ms.p90", "ms", "90th percentile latency"},
	{"latency_ms.p95", "ms", "95th percentile latency"},
	{"latency_ms.p99", "ms", "99th percentile latency"},
	{"latency_ms.max", "ms", "slowest request"},
	{"latency_ms.mean", "ms", "mean latency"},
	{"total_ms", "ms", "the whole run, first request to last response"},
	{"rps", "requests/s", "requests / total_ms"},
	{"cpu_us_per_request", "µs of CPU", "process CPU (client, proxy and server together; parallel runs included) per request"},
	{"peak_rss_mb", "MB", "the process's peak resident memory during the run (0 outside Linux)"},
	{"time_wait", "sockets", "the run's own sockets in TIME_WAIT on the client-proxy link when the run ended: the link's port paired with a client port it accepted, at whichever end closed first (0 outside Linux)"},
	{"lag_ms.link.p50", "ms", "median lateness of the simulated link's timers (delayed chunks and simulated TCP handshakes)"},
	{"lag_ms.link.p99", "ms", "99th percentile lateness of the simulated link's timers (delayed chunks and simulated TCP handshakes)"},
	{"lag_ms.link.max", "ms", "maximum lateness of the simulated link's timers (delayed chunks and simulated TCP handshakes)"},
	{"lag_ms.schedule.p50", "ms", "median lateness of the load schedule's timers (pauses between bursts, open-model arrivals)"},
	{"lag_ms.schedule.p99", "ms", "99th percentile lateness of the load schedule's timers (pauses between bursts, open-model arrivals)"},
	{"lag_ms.schedule.max", "ms", "maximum lateness of the load schedule's timers (pauses between bursts, open-model arrivals)"},
	{"lag_ms.idle_close.p50", "ms", "median lateness of the server's idle closes, past server.idle_timeout"},
	{"lag_ms.idle_close.p99", "ms", "99th percentile lateness of the server's idle closes, past server.idle_timeout"},
	{"lag_ms.idle_close.max", "ms", "maximum lateness of the server's idle closes, past server.idle_timeout"},
	{"queue_wait_ms.p50", "ms", "median wait between a request's scheduled start and the moment the client began it"},
	{"queue_wait_ms.p99", "ms", "99th percentile of that wait"},
	{"queue_wait_ms.max", "ms", "longest such wait"},
	{"status_5xx", "responses", "responses with a 5xx status at the client: a balancer's 502 is a response, so errors does not count it"},
	// The middlebox hop (a middlebox: section); all 0 without one.
	{"middlebox_flows", "connections", "connections the middlebox carried, each its own flow (behind a chain of boxes, the first box's)"},
	{"middlebox_expired", "flows", "flows the middlebox forgot after its idle timeout (behind a chain of boxes, summed over the boxes)"},
	{"middlebox_dropped_segments", "segments", "TCP segments (data, FIN, keepalive probes) that reached the middlebox on a forgotten flow and went no further, as the kernel counted them (Linux; behind a chain of boxes, summed over the boxes)"},
	{"middlebox_dropped_bytes", "bytes", "payload bytes the middlebox dropped on forgotten flows (behind a chain of boxes, summed over the boxes)"},
	{"middlebox_resets", "resets", "RSTs the middlebox sent, one per end reset (behind a chain of boxes, summed over the boxes)"},
	{"middlebox_probe_refreshes", "probes", "segments without data from the client (TCP keepalive probes) that refreshed a flow's idle clock (behind a chain of boxes, the first box's: the probes reach no other)"},
	// The balancer hop (a balancer: section); all 0 in a single-hop run.
	{"balancer_connections", "connections", "client-facing connections the balancer accepted (behind a chain of balancers, the first one's)"},
	{"balancer_requests", "requests", "requests the balancer received (behind a chain of balancers, the first one's)"},
	{"balancer_errors", "responses", "answers the balancer made itself because the backend side failed (502; Envoy 503; behind a chain of balancers, summed over them)"},
	{"balancer_closes", "connections", "client connections the balancer closed with no response because a reused backend connection died (HAProxy)"},
	{"balancer_retries", "attempts", "backend re-sends the balancer made that the client never saw (behind a chain of balancers, summed over them)"},
	{"backend_connections", "connections", "connections the balancer opened to the server (behind a chain of balancers, summed over them: each one's to the next, the last one's to the server)"},
	{"backend_reused_requests", "requests", "requests whose final backend attempt reused a connection"},
	{"backend_errors", "attempts", "failed backend attempts, retried ones included (behind a chain of balancers, summed over them)"},
	{"backend_errors_by_class.reset", "attempts", "backend attempts that failed with a connection reset"},
	{"backend_errors_by_class.eof", "attempts", "backend attempts that failed because the server closed the connection before answering"},
	{"backend_errors_by_class.timeout", "attempts", "backend attempts that passed balancer.backend.timeout"},
	{"backend_errors_by_class.refused", "attempts", "backend attempts whose connection was refused"},
	{"backend_errors_by_class.tls", "attempts", "backend attempts that failed in a TLS handshake"},
	{"backend_errors_by_class.other", "attempts", "backend attempts that failed for any other reason"},
	{"backend_proxy_connections", "connections", "connections through the balancer-server link (0 when it has no rtt or jitter)"},
	{"server_idle_closes", "connections", "connections the server closed first after an idle period: the embedded server's own count, or, for a real server, as the proxy saw them on its upstream side"},
	{"server_idle_close_ms.min", "ms", "shortest idle time before such a close (0 when there was none)"},
	{"server_idle_close_ms.p50", "ms", "median idle time before such a close, from the last byte the server sent"},
	{"server_idle_close_ms.max", "ms", "longest idle time before such a close"},
	// HTTP/3 (server.http: "3"); all 0 over TCP.
	{"client_idle_timeouts", "connections", "HTTP/3: connections the client closed silently because the negotiated idle timeout passed (min of both ends' max_idle_timeout)"},
	{"server_requests", "requests", "HTTP/3: requests the server handled, replayed ones included (a replayed 0-RTT request is handled once more than the client sent it)"},
	{"zero_rtt_accepted", "connections", "HTTP/3: resumed connections on which the server accepted the client's 0-RTT data"},
	{"zero_rtt_rejected", "connections", "HTTP/3: connections whose 0-RTT data the server refused; the client sent it again after the handshake"},
	{"zero_rtt_requests", "requests", "HTTP/3: requests the server handled from 0-RTT data, before the handshake completed: the ones anyone on the path can replay"},
	{"path_migrations", "migrations", "HTTP/3: times the server moved a connection to a new client address and port (a NAT rebinding) after validating the new path"},
	{"pings_sent", "frames", "HTTP/3: PING frames the client sent (keep-alive PINGs, and probes of loss recovery)"},
	{"datagrams_lost", "datagrams", "HTTP/3: datagrams the link dropped (network.loss), both directions"},
	{"middlebox_rebinds", "flows", "HTTP/3: new flows the middlebox made for a client whose flow it had forgotten: a new address and port toward the server"},
	{"middlebox_dropped_datagrams", "datagrams", "HTTP/3: datagrams that reached the middlebox on a forgotten flow and went no further"},
	{"middlebox_replays", "flights", "HTTP/3: 0-RTT first flights the middlebox copied and sent to the server again (middlebox.replay_first_flight)"},
}

// Doc returns the description of the metric name.
func Doc(name string) (MetricDoc, bool) {
	i := slices.IndexFunc(Docs, func(d MetricDoc) bool { return d.Name == name })
	if i < 0 {
		return MetricDoc{}, false
	}
	return Docs[i], true
}

// SchemaDescription is the text the result schema's metric property must carry.
func (d MetricDoc) SchemaDescription() string {
	return fmt.Sprintf("%s. Unit: %s.", d.Meaning, d.Unit)
}

// MarkdownTable renders Docs as the metric reference's table.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| metric | unit | meaning |\n|---|---|---|\n")
	for _, d := range Docs {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, d.Unit, d.Meaning)
	}
	return b.String()
}

// DocsProblems lists where Docs and the Metrics struct disagree, each as an instruction.
func DocsProblems() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range Docs {
		switch {
		case seen[d.Name]:
			out = append(out, fmt.Sprintf("engine/check/docs.go: %s is described twice", d.Name))
		case !IsName(d.Name):
			out = append(out, fmt.Sprintf("engine/check/docs.go: %s is described but is no field of check.Metrics; remove its line or add the field", d.Name))
		case d.Unit == "" || d.Meaning == "":
			out = append(out, fmt.Sprintf("engine/check/docs.go: %s needs a unit and a meaning", d.Name))
		}
		seen[d.Name] = true
	}
	for _, n := range Names() {
		if !seen[n] {
			out = append(out, fmt.Sprintf("engine/check/docs.go: metric %s has no description; add a line to Docs: {%q, \"UNIT\", \"what it counts\"},", n, n))
		}
	}
	return out
}
