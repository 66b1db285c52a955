// Package check compiles kalab's assertion expressions against the metric vocabulary and
// evaluates them against a run's metrics.
package check

import (
	"reflect"
	"slices"
	"sort"
)

// Latency holds latency statistics in milliseconds (scenario time).
type Latency struct {
	Min  float64 `expr:"min" json:"min"`
	P50  float64 `expr:"p50" json:"p50"`
	P90  float64 `expr:"p90" json:"p90"`
	P95  float64 `expr:"p95" json:"p95"`
	P99  float64 `expr:"p99" json:"p99"`
	Max  float64 `expr:"max" json:"max"`
	Mean float64 `expr:"mean" json:"mean"`
}

// ErrorsByClass counts failed requests per error class.
type ErrorsByClass struct {
	Reset   float64 `expr:"reset" json:"reset"`
	EOF     float64 `expr:"eof" json:"eof"`
	Timeout float64 `expr:"timeout" json:"timeout"`
	Refused float64 `expr:"refused" json:"refused"`
	TLS     float64 `expr:"tls" json:"tls"`
	Other   float64 `expr:"other" json:"other"`
}

// Metrics is the metric vocabulary (docs/reference/metrics.md), as assertions see it. The expr
// tags are the names users write; nested structs give the dotted names (latency_ms.p50).
// Extend it, never rename: scenario files and baselines depend on these names.
type Metrics struct {
	Requests          float64       `expr:"requests" json:"requests"`
	OK                float64       `expr:"ok" json:"ok"`
	Errors            float64       `expr:"errors" json:"errors"`
	ErrorsPer1000     float64       `expr:"errors_per_1000" json:"errors_per_1000"`
	ErrorsByClass     ErrorsByClass `expr:"errors_by_class" json:"errors_by_class"`
	Retries           float64       `expr:"retries" json:"retries"`
	HiddenRetries     float64       `expr:"hidden_retries" json:"hidden_retries"`
	Connections       float64       `expr:"connections" json:"connections"`
	ServerConnections float64       `expr:"server_connections" json:"server_connections"`
	ProxyConnections  float64       `expr:"proxy_connections" json:"proxy_connections"`
	ReusedRequests    float64       `expr:"reused_requests" json:"reused_requests"`
	ReuseRatio        float64       `expr:"reuse_ratio" json:"reuse_ratio"`
	TLSHandshakes     float64       `expr:"tls_handshakes" json:"tls_handshakes"`
	TLSResumed        float64       `expr:"tls_resumed" json:"tls_resumed"`
	LatencyMs         Latency       `expr:"latency_ms" json:"latency_ms"`
	TotalMs           float64       `expr:"total_ms" json:"total_ms"`
	RPS               float64       `expr:"rps" json:"rps"`
	CPUUsPerRequest   float64       `expr:"cpu_us_per_request" json:"cpu_us_per_request"`
	PeakRSSMB         float64       `expr:"peak_rss_mb" json:"peak_rss_mb"`
	// TimeWait is the sockets left in TIME_WAIT on the client-proxy link when the run
	// ended (read from /proc/net/tcp): what a connection-churning client leaves behind.
	// Only the run's own sockets count: the link's port paired with a client port the link
	// accepted, at whichever end closed first (the client's socket when the client closes,
	// the link's server-side socket when the server does).
	TimeWait float64 `expr:"time_wait" json:"time_wait"`
	// LagMs is how late the timers that carry the model fired against their plan, per
	// source: the machine's own account of whether it kept the scenario's timing.
	LagMs Lag `expr:"lag_ms" json:"lag_ms"`
	// QueueWaitMs is how long requests waited between their scheduled and actual start
	// (an open-model run whose concurrency cap was full, or a late schedule).
	QueueWaitMs Spread `expr:"queue_wait_ms" json:"queue_wait_ms"`
	// BytesUp and BytesDown are the bytes the link delivered each way (client to server,
	// server to client); 0 without a link. ListenOverflows counts connections reset because
	// the modelled listen queue was full (server.backlog_overflow: refuse).
	BytesUp         float64 `expr:"bytes_up" json:"bytes_up"`
	BytesDown       float64 `expr:"bytes_down" json:"bytes_down"`
	ListenOverflows float64 `expr:"listen_overflows" json:"listen_overflows"`
	// SYNRetriedConnects counts requests whose new connection connected only after the
	// client's kernel retransmitted a dropped SYN (a connect of 1 s or more in real time).
	SYNRetriedConnects float64 `expr:"syn_retried_connects" json:"syn_retried_connects"`
	// FailedBursts counts the bursts (load.burst requests each; the whole run when 0) in
	// which at least one request failed. FailedBurstsMask says which: bit b is set when
	// burst b (0-based) had a failure, for the first 53 bursts (exact in a float64), so
	// variant('a').failed_bursts_mask == variant('b').failed_bursts_mask says that two runs
	// failed in the same bursts.
	FailedBursts     float64 `expr:"failed_bursts" json:"failed_bursts"`
	FailedBurstsMask float64 `expr:"failed_bursts_mask" json:"failed_bursts_mask"`

	// Status5xx counts responses with a 5xx status at the client: a balancer's 502 is a
	// response (the request did not fail at the socket), so errors does not count it.
	Status5xx float64 `expr:"status_5xx" json:"status_5xx"`

	// Balancer hop (topology v2); all 0 in a single-hop run.
	BalancerConnections     float64       `expr:"balancer_connections" json:"balancer_connections"`           // client-facing connections the balancer accepted
	BalancerRequests        float64       `expr:"balancer_requests" json:"balancer_requests"`                 // requests it received
	BalancerErrors          float64       `expr:"balancer_errors" json:"balancer_errors"`                     // answers it made itself (502, or Envoy's 503)
	BalancerCloses          float64       `expr:"balancer_closes" json:"balancer_closes"`                     // client connections it closed with no response (HAProxy)
	BalancerRetries         float64       `expr:"balancer_retries" json:"balancer_retries"`                   // backend re-sends the client never saw
	BackendConnections      float64       `expr:"backend_connections" json:"backend_connections"`             // connections it opened to the server
	BackendReusedRequests   float64       `expr:"backend_reused_requests" json:"backend_reused_requests"`     // final attempts on a reused backend connection
	BackendErrors           float64       `expr:"backend_errors" json:"backend_errors"`                       // failed backend attempts, retried ones included
	BackendErrorsByClass    ErrorsByClass `expr:"backend_errors_by_class" json:"backend_errors_by_class"`     // the same by class: reset and eof are a dying connection
	BackendProxyConnections float64       `expr:"backend_proxy_connections" json:"backend_proxy_connections"` // accepted by the balancer-server link
	// Middlebox hop (a middlebox: section); all 0 without one.
	MiddleboxFlows           float64 `expr:"middlebox_flows" json:"middlebox_flows"`                       // connections the middlebox carried, each its own flow
	MiddleboxExpired         float64 `expr:"middlebox_expired" json:"middlebox_expired"`                   // flows the middlebox forgot after its idle timeout
	MiddleboxDroppedSegments float64 `expr:"middlebox_dropped_segments" json:"middlebox_dropped_segments"` // TCP segments (data, FIN, keepalive probes) that reached the middlebox on a forgotten flow and went no further, as the kernel counted them (Linux)
	MiddleboxDroppedBytes    float64 `expr:"middlebox_dropped_bytes" json:"middlebox_dropped_bytes"`       // payload bytes the middlebox dropped on forgotten flows
	MiddleboxResets          float64 `expr:"middlebox_resets" json:"middlebox_resets"`                     // RSTs the middlebox sent, one per end reset
	MiddleboxProbeRefreshes  float64 `expr:"middlebox_probe_refreshes" json:"middlebox_probe_refreshes"`   // segments without data from the client (TCP keepalive probes) that refreshed a flow's idle clock
	// ServerIdleCloses counts connections the server closed first after an idle period, as
	// the proxy saw them on its upstream side (connection truth for any server).
	ServerIdleCloses float64 `expr:"server_idle_closes" json:"server_idle_closes"`
	// ServerIdleCloseMs is how long those connections had been idle when the server closed
	// them; 0 when there were none.
	ServerIdleCloseMs IdleClose `expr:"server_idle_close_ms" json:"server_idle_close_ms"`
	// FailedAttempts counts requests the client wrote into a connection the server had
	// already closed, so they never reached it (netsim.ConnRecord.FailedAttempt).
	FailedAttempts float64 `expr:"failed_attempts" json:"failed_attempts"`
	// HTTP/3 (server.http: "3"); all 0 over TCP.
	ClientIdleTimeouts        float64 `expr:"client_idle_timeouts" json:"client_idle_timeouts"`
	ServerRequests            float64 `expr:"server_requests" json:"server_requests"`
	ZeroRTTAccepted           float64 `expr:"zero_rtt_accepted" json:"zero_rtt_accepted"`
	ZeroRTTRejected           float64 `expr:"zero_rtt_rejected" json:"zero_rtt_rejected"`
	ZeroRTTRequests           float64 `expr:"zero_rtt_requests" json:"zero_rtt_requests"`
	PathMigrations            float64 `expr:"path_migrations" json:"path_migrations"`
	PingsSent                 float64 `expr:"pings_sent" json:"pings_sent"`
	DatagramsLost             float64 `expr:"datagrams_lost" json:"datagrams_lost"`
	MiddleboxRebinds          float64 `expr:"middlebox_rebinds" json:"middlebox_rebinds"`
	MiddleboxDroppedDatagrams float64 `expr:"middlebox_dropped_datagrams" json:"middlebox_dropped_datagrams"`
	MiddleboxReplays          float64 `expr:"middlebox_replays" json:"middlebox_replays"`
}

// IdleClose summarises idle times before a close, in milliseconds (scenario time).
type IdleClose struct {
	Min float64 `expr:"min" json:"min"`
	P50 float64 `expr:"p50" json:"p50"`
	Max float64 `expr:"max" json:"max"`
}

// Spread holds the median, 99th percentile and maximum of a lateness, in milliseconds of
// scenario time.
type Spread struct {
	P50 float64 `expr:"p50" json:"p50"`
	P99 float64 `expr:"p99" json:"p99"`
	Max float64 `expr:"max" json:"max"`
}

// Lag is the lateness of each kind of timer that carries the model.
type Lag struct {
	// Link is how late the simulated link released its delayed chunks.
	Link Spread `expr:"link" json:"link"`
	// Schedule is how late the load schedule's pauses and open-model arrivals fired.
	Schedule Spread `expr:"schedule" json:"schedule"`
	// IdleClose is how long after its idle timeout the server really closed a connection.
	IdleClose Spread `expr:"idle_close" json:"idle_close"`
}

// Names lists every metric name in dotted form, sorted.
func Names() []string { return slices.Clone(names) }

// IsName reports whether name is a metric of the vocabulary.
func IsName(name string) bool {
	_, ok := fieldIndex[name]
	return ok
}

// FromFlat builds Metrics from dotted names; unknown names are ignored and missing ones are 0.
func FromFlat(flat map[string]float64) Metrics {
	var m Metrics
	v := reflect.ValueOf(&m).Elem()
	for name, idx := range fieldIndex {
		if x, ok := flat[name]; ok {
			v.FieldByIndex(idx).SetFloat(x)
		}
	}
	return m
}

// Flat returns the metrics keyed by dotted name.
func (m Metrics) Flat() map[string]float64 {
	out := make(map[string]float64, len(fieldIndex))
	v := reflect.ValueOf(m)
	for name, idx := range fieldIndex {
		out[name] = v.FieldByIndex(idx).Float()
	}
	return out
}

// fieldIndex maps each dotted name to its field in Metrics; names is the same, sorted. Both
// come from the expr tags, the one place the vocabulary is written.
var fieldIndex, names = func() (map[string][]int, []string) {
	idx := map[string][]int{}
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("expr")
			if prefix != "" {
				name = prefix + "." + name
			}
			at := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, name, at)
				continue
			}
			idx[name] = at
		}
	}
	walk(reflect.TypeOf(Metrics{}), "", nil)
	sorted := make([]string, 0, len(idx))
	for n := range idx {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	return idx, sorted
}()
