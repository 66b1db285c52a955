package scenario

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kalab-dev/kalab/engine/internal/tolerance"
	"github.com/kalab-dev/kalab/engine/scenario/internal/yamldoc"
)

// Settings is everything one run needs, in scenario time (before any time scale).
type Settings struct {
	TimeScale float64 `yaml:"time_scale" json:"time_scale"`
	// Clock is the clock the run asks for: ClockVirtual, ClockReal, or "" (the runner
	// chooses: virtual when every hop of the run is one kalab models).
	Clock   string  `yaml:"clock" json:"clock,omitempty"`
	Network Network `yaml:"network" json:"network"`
	Server  Server  `yaml:"server" json:"server"`
	Client  Client  `yaml:"client" json:"client"`
	Load    Load    `yaml:"load" json:"load"`
	// Balancer, when set, puts a load balancer between client and server (topology v2:
	// client -> network -> balancer -> backend_network -> server); nil is single-hop.
	// A list of balancers (balancer: [...]) is a chain in path order from the client, each
	// one's backend pool dialling the next; then Balancer is its first and BalancerChain
	// the whole list (Balancers reads both).
	Balancer      *Balancer   `yaml:"balancer" json:"balancer,omitempty"`
	BalancerChain []*Balancer `yaml:"-" json:"-"`
	// Middlebox, when set, puts a box that forgets idle flows (a NAT gateway, a firewall,
	// a cloud load balancer's flow table) where the client's connections leave it:
	// client -> middlebox -> network -> ... -> server; nil is none.
	// A list of boxes (middlebox: [...]) is a chain in path order from the client; then
	// Middlebox is its first box and MiddleboxChain the whole list (Middleboxes reads both).
	Middlebox      *Middlebox   `yaml:"middlebox" json:"middlebox,omitempty"`
	MiddleboxChain []*Middlebox `yaml:"-" json:"-"`
	// Env is what the programs a run starts (client.exec, server.exec, balancer.exec, server.command) get
	// besides kalab's allowlist: NAME=value sets a variable, a bare NAME passes kalab's
	// own value of it through. Nothing else of kalab's environment reaches them.
	Env []string `yaml:"env" json:"env,omitempty"`
}

// Balancer configures the embedded reverse proxy of a two-hop topology.
type Balancer struct {
	Preset         string          `yaml:"preset" json:"preset,omitempty"`
	IdleTimeout    Duration        `yaml:"idle_timeout" json:"idle_timeout"`
	BackendNetwork Network         `yaml:"backend_network" json:"backend_network"`
	Backend        BalancerBackend `yaml:"backend" json:"backend"`
	OnBackendError string          `yaml:"on_backend_error" json:"on_backend_error"`
	Retries        int             `yaml:"retries" json:"retries"`
	ErrorStatus    int             `yaml:"error_status" json:"error_status"`
	Reuse          string          `yaml:"reuse" json:"reuse"`
	// DeregistrationDelay is how long a deregistered backend (server.events deregister)
	// keeps its open connections before it is stopped (AWS ALB's target group attribute).
	DeregistrationDelay Duration `yaml:"deregistration_delay" json:"deregistration_delay,omitempty"`
	// Exec, when set (nginx or haproxy), runs the real program as this balancer: kalab
	// writes its client-facing idle timeout and its pool of backend connections
	// (keepalive, idle_timeout, max_idle) into its configuration, and everything else is
	// the program's own.
	Exec string `yaml:"exec" json:"exec,omitempty"`
}

// Real reports whether the balancer is a real program (exec).
func (b *Balancer) Real() bool { return b != nil && b.Exec != "" }

// Middlebox is a box on the client's path that forgets a flow idle for IdleTimeout.
type Middlebox struct {
	Preset      string   `yaml:"preset" json:"preset,omitempty"`
	IdleTimeout Duration `yaml:"idle_timeout" json:"idle_timeout"`
	// OnExpiry is drop (discard the flow's later segments both ways, tell no one) or
	// reset (an RST to the ends in ResetTo, at ResetAt).
	OnExpiry string `yaml:"on_expiry" json:"on_expiry"`
	ResetAt  string `yaml:"reset_at" json:"reset_at"` // expiry | next-segment
	ResetTo  string `yaml:"reset_to" json:"reset_to"` // client | server | both
	// ReplayFirstFlight, over HTTP/3, makes the box an attacker on the path too: it copies
	// the client's first flight of every new flow that carries 0-RTT data and sends the
	// copy again this long after, from another address; 0 never does.
	ReplayFirstFlight Duration `yaml:"replay_first_flight" json:"replay_first_flight,omitempty"`
}

// TCPKeepalive is the kernel's keepalive on the client's sockets (SO_KEEPALIVE with
// TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT); Idle none sends no probes.
type TCPKeepalive struct {
	Idle     Duration `yaml:"idle" json:"idle"`
	Interval Duration `yaml:"interval" json:"interval"`
	Count    int      `yaml:"count" json:"count"`
}

// BalancerBackend is the balancer's pool of connections to the server.
type BalancerBackend struct {
	KeepAlive     bool     `yaml:"keepalive" json:"keepalive"`
	IdleTimeout   Duration `yaml:"idle_timeout" json:"idle_timeout"`
	MaxIdle       int      `yaml:"max_idle" json:"max_idle"`
	MaxConns      int      `yaml:"max_conns" json:"max_conns"`
	Scheduling    string   `yaml:"scheduling" json:"scheduling"`
	LivenessCheck bool     `yaml:"liveness_check" json:"liveness_check"`
	Timeout       Duration `yaml:"timeout" json:"timeout"`
}

// Network is the simulated link.
type Network struct {
	RTT    Duration `yaml:"rtt" json:"rtt"`
	Jitter Duration `yaml:"jitter" json:"jitter"`
	// InitialWindow is the TCP initial congestion window in segments of 1,448 bytes.
	InitialWindow int `yaml:"initial_window" json:"initial_window"`
	// SlowStartAfterIdle shrinks the window of a connection idle longer than its RTO, as
	// Linux does by default (net.ipv4.tcp_slow_start_after_idle=1).
	SlowStartAfterIdle bool `yaml:"slow_start_after_idle" json:"slow_start_after_idle"`
	// Bandwidth limits each direction; zero means no limit.
	Bandwidth Bandwidth `yaml:"bandwidth" json:"bandwidth"`
	// BandwidthShared makes the limit one bottleneck for all connections of the run.
	BandwidthShared bool `yaml:"bandwidth_shared" json:"bandwidth_shared"`
	// Loss is the share of datagrams the link drops, each direction, drawn with the load
	// seed: HTTP/3 only (a TCP link does not lose what it carries).
	Loss float64 `yaml:"loss" json:"loss,omitempty"`
}

// Bandwidth is a rate in bits per second, written as 10Mbit, 1Gbit, 512kbit or none.
type Bandwidth int64

var bandwidthSyntax = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*(bit|kbit|Mbit|Gbit)$`)

// parseBandwidth reads a scenario bandwidth: a positive rate with a decimal unit (bit,
// kbit, Mbit, Gbit, as tc writes them), none, or 0.
func parseBandwidth(s string) (Bandwidth, error) {
	s = strings.TrimSpace(s)
	if s == "none" || s == "0" {
		return 0, nil
	}
	m := bandwidthSyntax.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a bandwidth (use e.g. 10Mbit, 1Gbit, 512kbit or none)", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{"bit": 1, "kbit": 1e3, "Mbit": 1e6, "Gbit": 1e9}[m[2]]
	bps := v * mult
	if err != nil || bps < 1000 || bps > 1e12 {
		return 0, fmt.Errorf("%q is out of range: a bandwidth is from 1kbit to 1000Gbit", s)
	}
	return Bandwidth(bps), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *Bandwidth) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a bandwidth such as 10Mbit, 1Gbit or none")
	}
	v, err := parseBandwidth(n.Value)
	if err != nil {
		return yamldoc.At(n, err)
	}
	*b = v
	return nil
}

// String formats the rate in the largest unit that keeps it whole, "none" for zero.
func (b Bandwidth) String() string {
	switch {
	case b == 0:
		return "none"
	case b%1e9 == 0:
		return fmt.Sprintf("%dGbit", b/1e9)
	case b%1e6 == 0:
		return fmt.Sprintf("%dMbit", b/1e6)
	case b%1e3 == 0:
		return fmt.Sprintf("%dkbit", b/1e3)
	}
	return fmt.Sprintf("%dbit", int64(b))
}

// MarshalJSON writes the rate as its string form, so records read like the file.
func (b Bandwidth) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(b.String())), nil }

// Server configures the embedded server.
type Server struct {
	Preset          string   `yaml:"preset" json:"preset,omitempty"`
	TLS             bool     `yaml:"tls" json:"tls"`
	TLSVersion      Version  `yaml:"tls_version" json:"tls_version"`
	SessionTickets  bool     `yaml:"session_tickets" json:"session_tickets"`
	HTTP            Version  `yaml:"http" json:"http"`
	IdleTimeout     Duration `yaml:"idle_timeout" json:"idle_timeout"`
	KeepaliveHint   Hint     `yaml:"keepalive_hint" json:"keepalive_hint"`
	HintOnlyIfAsked bool     `yaml:"hint_only_if_asked" json:"hint_only_if_asked"`
	HintCountdown   bool     `yaml:"hint_countdown" json:"hint_countdown"`
	MaxRequests     int      `yaml:"max_requests" json:"max_requests"`
	CloseEvery      int      `yaml:"close_every" json:"close_every"`
	HTTP2MaxStreams int      `yaml:"http2_max_streams" json:"http2_max_streams"`
	// ZeroRTT, over HTTP/3, accepts 0-RTT data on a resumed connection.
	ZeroRTT bool `yaml:"zero_rtt" json:"zero_rtt,omitempty"`
	// Backlog, AcceptDelay and BacklogOverflow are the listen queue at the link's edge.
	Backlog         int      `yaml:"backlog" json:"backlog"`
	AcceptDelay     Duration `yaml:"accept_delay" json:"accept_delay"`
	BacklogOverflow string   `yaml:"backlog_overflow" json:"backlog_overflow"`
	Response        Response `yaml:"response" json:"response"`
	// Exec, Command and URL put a real server behind the proxy instead of the embedded one.
	Exec    string `yaml:"exec" json:"exec,omitempty"`       // nginx | node | haproxy
	Command string `yaml:"command" json:"command,omitempty"` // a shell command with {port}
	URL     string `yaml:"url" json:"url,omitempty"`         // a server the user runs
	// Events are the reloads, drains, restarts and deregistrations the embedded server goes through.
	Events []ServerEvent `yaml:"events" json:"events,omitempty"`
}

// ServerEvent is a deploy's moment in a run: at a time, or after a number of requests.
type ServerEvent struct {
	Do            string   `yaml:"do" json:"do"` // goaway | drain | restart | deregister
	At            Duration `yaml:"at" json:"at,omitempty"`
	AfterRequests int      `yaml:"after_requests" json:"after_requests,omitempty"`
	Grace         Duration `yaml:"grace" json:"grace,omitempty"` // drain only
	Gap           Duration `yaml:"gap" json:"gap,omitempty"`     // restart only
}

// Real reports whether the server is a real program or address (exec, command, url) rather
// than the embedded server.
func (s Server) Real() bool { return s.Exec != "" || s.Command != "" || s.URL != "" }

// HTTP3 reports whether the run speaks HTTP/3 over QUIC (server.http: "3").
func (s Server) HTTP3() bool { return s.HTTP == "3" }

// Response is what the server answers to every request.
type Response struct {
	Status    int      `yaml:"status" json:"status"`
	BodyBytes int      `yaml:"body_bytes" json:"body_bytes"`
	Delay     Duration `yaml:"delay" json:"delay"`
}

// Client is the client profile.
type Client struct {
	Preset            string            `yaml:"preset" json:"preset,omitempty"`
	ProgramVersion    string            `yaml:"version" json:"version,omitempty"` // the release the preset models (a real program's is client.exec's version)
	Implementation    string            `yaml:"implementation" json:"implementation"`
	KeepAlive         bool              `yaml:"keepalive" json:"keepalive"`
	IdleTimeout       Duration          `yaml:"idle_timeout" json:"idle_timeout"`
	HonorHint         bool              `yaml:"honor_hint" json:"honor_hint"`
	HintParser        string            `yaml:"hint_parser" json:"hint_parser"`
	HintBuffer        Duration          `yaml:"hint_buffer" json:"hint_buffer"`
	HintMax           Duration          `yaml:"hint_max" json:"hint_max"`
	MaxConns          int               `yaml:"max_conns" json:"max_conns"`
	MaxIdle           int               `yaml:"max_idle" json:"max_idle"`
	Scheduling        string            `yaml:"scheduling" json:"scheduling"`
	CallerYields      bool              `yaml:"caller_yields" json:"caller_yields"`
	DropEmptyPool     bool              `yaml:"drop_empty_pool" json:"drop_empty_pool"`
	LivenessCheck     bool              `yaml:"liveness_check" json:"liveness_check"`
	LivenessEOFOnly   bool              `yaml:"liveness_eof_only" json:"liveness_eof_only"`
	SessionResumption bool              `yaml:"session_resumption" json:"session_resumption"`
	TLSKeyShare       string            `yaml:"tls_key_share" json:"tls_key_share"` // what kalab's own clients offer: KeyShareX25519 (default) or KeyShareGoDefault
	HTTP2             string            `yaml:"http2" json:"http2"`
	HTTP2GoAway       string            `yaml:"http2_goaway" json:"http2_goaway,omitempty"` // resend (Go, curl, Chromium) | fail (Node's http2, undici)
	KeepAliveHeader   bool              `yaml:"keepalive_header" json:"keepalive_header"`
	Timeout           Duration          `yaml:"timeout" json:"timeout"`
	TCPKeepalive      TCPKeepalive      `yaml:"tcp_keepalive" json:"tcp_keepalive"`
	Method            string            `yaml:"method" json:"method"`
	BodyBytes         int               `yaml:"body_bytes" json:"body_bytes"`
	Path              string            `yaml:"path" json:"path"`
	Headers           map[string]string `yaml:"headers" json:"headers,omitempty"`
	Retry             Retry             `yaml:"retry" json:"retry"`
	// QUIC is what the client does over HTTP/3 (server.http: "3").
	QUIC QUIC `yaml:"quic" json:"quic,omitzero"`
	// Exec, when set, makes the run's client a real program (client.exec); the model's
	// fields then apply only where the program has the knob (see engine/execclient).
	Exec *Exec `yaml:"exec" json:"exec,omitempty"`
}

// QUIC is a client's HTTP/3 transport: its keep-alive PINGs and what it sends as 0-RTT.
// Its max_idle_timeout is client.idle_timeout.
type QUIC struct {
	KeepAlivePeriod Duration `yaml:"keepalive_period" json:"keepalive_period,omitempty"`
	ZeroRTT         string   `yaml:"zero_rtt" json:"zero_rtt,omitempty"` // off | safe (GET, HEAD) | all
}

// Retry is the client's visible retry policy.
type Retry struct {
	Attempts       int      `yaml:"attempts" json:"attempts"`
	On             []string `yaml:"on" json:"on"`
	IdempotentOnly bool     `yaml:"idempotent_only" json:"idempotent_only"`
	ReusedOnly     bool     `yaml:"reused_only" json:"reused_only"`
	ZeroBytesOnly  bool     `yaml:"zero_bytes_only" json:"zero_bytes_only"`
	Hidden         bool     `yaml:"hidden" json:"hidden"`
}

// Load is the request schedule.
type Load struct {
	Requests    int     `yaml:"requests" json:"requests"`
	Concurrency int     `yaml:"concurrency" json:"concurrency"`
	Burst       int     `yaml:"burst" json:"burst"`
	Pause       Range   `yaml:"pause" json:"pause"`
	Rate        float64 `yaml:"rate" json:"rate"`
	Arrival     string  `yaml:"arrival" json:"arrival"`
	Seed        int64   `yaml:"seed" json:"seed"`
	// Replay, when set, replaces the schedule with recorded traffic: a file (relative to
	// the scenario file) whose requests keep their start times, each client with its own
	// connection pool. The loader reads it once and sets Requests to what it replays.
	Replay       string       `yaml:"replay" json:"replay,omitempty"`
	ReplayFormat string       `yaml:"replay_format" json:"replay_format,omitempty"`
	ReplayClient string       `yaml:"replay_client" json:"replay_client,omitempty"`
	ReplayFields ReplayFields `yaml:"replay_fields" json:"replay_fields,omitzero"`
	ReplayFrom   Duration     `yaml:"replay_from" json:"replay_from,omitempty"`
	ReplayTo     Duration     `yaml:"replay_to" json:"replay_to,omitempty"`
	ReplaySample float64      `yaml:"replay_sample" json:"replay_sample,omitempty"`
	// ReplayPath is Replay resolved against the scenario's directory, and ReplaySpan the
	// recorded time from the first replayed request to the last (unscaled); both set by
	// the loader.
	ReplayPath string        `yaml:"-" json:"-"`
	ReplaySpan time.Duration `yaml:"-" json:"-"`
}

// ReplayFields names the fields of a JSON-lines recording.
type ReplayFields struct {
	Time      string `yaml:"time" json:"time,omitempty"`
	Client    string `yaml:"client" json:"client,omitempty"`
	UserAgent string `yaml:"user_agent" json:"user_agent,omitempty"`
}

// Duration is a time.Duration written as a Go duration string; none and 0 mean zero.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ParseDuration reads a scenario duration: a non-negative Go duration, none, or 0.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "none" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil && durationSyntax.MatchString(s) {
		return 0, fmt.Errorf("%q is too long: a duration must be under %v (about 292 years)", s, time.Duration(maxDuration).Truncate(time.Hour))
	}
	if err != nil || d < 0 || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, fmt.Errorf("%q is not a duration (use e.g. 1500ms, 2s or none)", s)
	}
	return Duration(d), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration such as 1500ms, 2s or none")
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return yamldoc.At(n, err)
	}
	*d = v
	return nil
}

// String formats like time.Duration, with "none" for zero.
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	return time.Duration(d).String()
}

// MarshalJSON writes the duration as its string form, so records read like the file.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(d.String())), nil }

// Range is a fixed duration (Min == Max) or a min..max range.
type Range struct {
	Min, Max Duration
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Range) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration or a range such as 1.5s..2.5s")
	}
	lo, hi, found := strings.Cut(n.Value, "..")
	min, err := ParseDuration(lo)
	if err != nil {
		return yamldoc.At(n, err)
	}
	max := min
	if found {
		if max, err = ParseDuration(hi); err != nil {
			return yamldoc.At(n, err)
		}
	}
	*r = Range{Min: min, Max: max}
	return nil
}

// String renders "2s" or "1.5s..2.5s".
func (r Range) String() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.Min.String() + ".." + r.Max.String()
}

// MarshalJSON writes the range in its file form.
func (r Range) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(r.String())), nil }

// Version is an HTTP or TLS version written as "1.1", "2", "1.2" or "1.3" (a YAML number is
// accepted too).
type Version string

// UnmarshalYAML implements yaml.Unmarshaler.
func (v *Version) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a version such as \"1.1\"")
	}
	*v = Version(n.Value)
	return nil
}

// HintMode says what the server's Keep-Alive header holds.
type HintMode string

// Hint modes.
const (
	HintOff      HintMode = "off"      // no Keep-Alive header
	HintOn       HintMode = "on"       // timeout = idle_timeout in whole seconds, floored
	HintDuration HintMode = "duration" // timeout = the given duration in whole seconds, floored
	HintRaw      HintMode = "raw"      // the header value verbatim
)

// Hint is the server's Keep-Alive header setting.
type Hint struct {
	Mode     HintMode `json:"mode"`
	Duration Duration `json:"duration,omitempty"`
	Raw      string   `json:"raw,omitempty"`
}

// UnmarshalYAML implements yaml.Unmarshaler: false, true, a duration or a raw value.
func (h *Hint) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected false, true, a duration or a raw header value")
	}
	switch {
	case n.Tag == "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return err
		}
		if b {
			*h = Hint{Mode: HintOn}
		} else {
			*h = Hint{Mode: HintOff}
		}
	case strings.Contains(n.Value, "="):
		*h = Hint{Mode: HintRaw, Raw: n.Value}
	default:
		d, err := ParseDuration(n.Value)
		if err != nil {
			return yamldoc.At(n, err)
		}
		*h = Hint{Mode: HintDuration, Duration: d}
	}
	return nil
}

// Tolerance is how far a metric may move in its worse direction from the baseline run
// (engine/internal/tolerance).
type Tolerance = tolerance.Tolerance

// The clocks a run can ask for.
const (
	ClockVirtual = "virtual"
	ClockReal    = "real"
)

// The key exchanges client.tls_key_share can ask kalab's own clients to offer.
const (
	KeyShareX25519    = "x25519"         // X25519 alone, the default
	KeyShareGoDefault = "x25519mlkem768" // Go's own default: X25519MLKEM768, then X25519
)
