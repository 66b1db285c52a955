// Package explain tells, from a run's own records (its request and connection files), why
// each request that failed, was retried, was silently re-sent or got a 502 went that way:
// when its connection last carried a response, when and why it was closed, when the FIN
// reached the client, what the client was doing then, and which rule of the client's preset
// turned that into an error or a re-send. Times are in scenario time from the run's start.
package explain

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/report"
)

// Run is what the explanations read of one run: its record and its two files.
type Run struct {
	Record   *report.Run
	Requests []report.Request // in seq order
	Conns    []report.Conn
	// Subset: Requests are some of the run's, those the story of one request reads (the
	// HTML report's stream of a large run), so no count over all requests is told.
	Subset bool
	params params
}

// params is the part of a run's resolved settings (report.Run.Params) the text names.
type params struct {
	Network struct {
		RTT string `json:"rtt"`
	} `json:"network"`
	Server struct {
		Preset      string `json:"preset"`
		HTTP        string `json:"http"`
		IdleTimeout string `json:"idle_timeout"`
		MaxRequests int    `json:"max_requests"`
		Backlog     int    `json:"backlog"`
		Events      []struct {
			Do            string `json:"do"`
			At            string `json:"at"`
			AfterRequests int    `json:"after_requests"`
		} `json:"events"`
		AcceptDelay string `json:"accept_delay"`
		Response    struct {
			Delay string `json:"delay"`
		} `json:"response"`
	} `json:"server"`
	Client struct {
		Preset         string `json:"preset"`
		Implementation string `json:"implementation"`
		KeepAlive      bool   `json:"keepalive"`
		IdleTimeout    string `json:"idle_timeout"`
		MaxIdle        int    `json:"max_idle"`
		Method         string `json:"method"`
		HTTP2GoAway    string `json:"http2_goaway"`
		Timeout        string `json:"timeout"`
		TCPKeepalive   struct {
			Idle     string `json:"idle"`
			Interval string `json:"interval"`
		} `json:"tcp_keepalive"`
		Retry struct {
			Attempts int      `json:"attempts"`
			On       []string `json:"on"`
		} `json:"retry"`
		Quic struct {
			KeepalivePeriod string `json:"keepalive_period"`
		} `json:"quic"`
	} `json:"client"`
	Load struct {
		Concurrency int `json:"concurrency"`
		Burst       int `json:"burst"`
	} `json:"load"`
	Middlebox paramBoxes `json:"middlebox"`
	// Tiers are the run's balancers in path order (balancer() is the first).
	Tiers paramTiers `json:"balancer"`
}

// balancer is the balancer the client meets (the first of a chain), nil without one.
func (p *params) balancer() *paramBalancer {
	if len(p.Tiers) == 0 {
		return nil
	}
	return &p.Tiers[0]
}

// paramBalancer is one balancer of the run's params.
type paramBalancer struct {
	Preset         string `json:"preset"`
	IdleTimeout    string `json:"idle_timeout"`
	OnBackendError string `json:"on_backend_error"`
	ErrorStatus    int    `json:"error_status"`
	// DeregistrationDelay is how long a deregistered backend kept its connections.
	DeregistrationDelay string `json:"deregistration_delay"`
	BackendNetwork      struct {
		RTT string `json:"rtt"`
	} `json:"backend_network"`
}

// paramTiers are the run's balancers in path order from the client: the params give one
// balancer as an object and a chain as a list.
type paramTiers []paramBalancer

func (p *paramTiers) UnmarshalJSON(b []byte) error { return oneOrList(b, (*[]paramBalancer)(p)) }

// NewRun prepares a run's records for explanation; the requests need not be sorted.
func NewRun(rec *report.Run, reqs []report.Request, conns []report.Conn) (*Run, error) {
	r := &Run{Record: rec, Requests: append([]report.Request(nil), reqs...), Conns: conns}
	sort.Slice(r.Requests, func(i, j int) bool { return r.Requests[i].Seq < r.Requests[j].Seq })
	if len(rec.Params) > 0 {
		if err := json.Unmarshal(rec.Params, &r.params); err != nil {
			return nil, fmt.Errorf("the run's params: %w", err)
		}
	}
	return r, nil
}

// Notable lists the requests an explanation is owed: failed, retried, silently re-sent,
// answered 5xx, and new connections the run's rules do not account for.
func (r *Run) Notable() []int {
	var out []int
	for i, q := range r.Requests {
		if r.notable(i) || r.unexpectedNew(i) != "" {
			out = append(out, q.Seq)
		}
	}
	return out
}

// Troubled lists the failed, retried, silently re-sent and 5xx requests: Notable without
// the new connections.
func (r *Run) Troubled() []int {
	var out []int
	for i, q := range r.Requests {
		if r.notable(i) {
			out = append(out, q.Seq)
		}
	}
	return out
}

func (r *Run) notable(i int) bool {
	q := r.Requests[i]
	return q.Class != "" || q.Attempts > 1 || q.HiddenRetries > 0 || q.Status >= 500 || q.BackendAttempts > 1
}

// Request explains one request (by seq) in one paragraph; ok is false when the run has no
// such request.
func Request(r *Run, seq int) (text string, ok bool) {
	i := r.index(seq)
	if i == len(r.Requests) || r.Requests[i].Seq != seq {
		return "", false
	}
	q := r.Requests[i]
	switch {
	case r.backendFailure(i):
		return r.backendStory(i), true
	case q.Class != "" && q.Conn == 0:
		return r.dialStory(i), true
	case r.natExpiredInFlight(i):
		return r.natStory(i), true
	case r.neverAccepted(i):
		return r.listenStory(i), true
	case r.notable(i):
		return r.staleStory(i), true
	}
	if why := r.unexpectedNew(i); why != "" {
		return why, true
	}
	return r.plainStory(i), true
}

// maxNewConns bounds how many new-connection paragraphs All writes: a thrashing pool opens
// hundreds for one reason.
const maxNewConns = 5

// All explains every notable request, one paragraph each, separated by blank lines; after
// maxNewConns paragraphs about new connections it counts the rest in one line.
func All(r *Run) string {
	var parts []string
	newConns := 0
	for _, seq := range r.Notable() {
		t, _ := Request(r, seq)
		if i := r.index(seq); !r.notable(i) {
			if newConns++; newConns > maxNewConns {
				continue
			}
		}
		parts = append(parts, t)
	}
	if newConns > maxNewConns {
		parts = append(parts, fmt.Sprintf("... and %d more new connections like these (kalab explain --request N tells one).", newConns-maxNewConns))
	}
	if len(parts) == 0 {
		return "Nothing to explain: no request failed, was retried, re-sent or answered 5xx, and every new connection follows from the run's rules."
	}
	return strings.Join(parts, "\n\n")
}

// backendFailure reports whether request i met its trouble on the balancer's backend
// side: the balancer answered it with an error status or re-sent it to the server.
func (r *Run) backendFailure(i int) bool {
	q := r.Requests[i]
	return (q.Status >= 500 && r.params.balancer() != nil) || q.BackendAttempts > 1
}

// balancerName is the balancer as the text names it, with its preset.
func (r *Run) balancerName() string {
	if b := r.params.balancer(); b != nil && b.Preset != "" {
		return "the balancer (" + b.Preset + ")"
	}
	return "the balancer"
}

// balancerConn is the balancer's record of client connection conn. The balancer numbers
// the client's connections in the order it accepts them, the order the client dialled
// them, so its connection n is the client's connection n; it must have opened before the
// request started.
func (r *Run) balancerConn(conn uint64, q report.Request) *report.Conn {
	for k := range r.Conns {
		if c := &r.Conns[k]; c.Side == report.SideBalancer && c.ID == conn && c.OpenedMs <= q.StartMs {
			return c
		}
	}
	return nil
}

func (r *Run) index(seq int) int {
	return sort.Search(len(r.Requests), func(i int) bool { return r.Requests[i].Seq >= seq })
}

func (r *Run) oneWay() time.Duration { return dur(r.params.Network.RTT) / 2 }

// backOneWay is half the round trip of the hop from the balancer in front of the server
// (the last of a chain) to the server.
func (r *Run) backOneWay() time.Duration {
	if len(r.params.Tiers) == 0 {
		return 0
	}
	return dur(r.params.Tiers[len(r.params.Tiers)-1].BackendNetwork.RTT) / 2
}

// viaRTT is the round trip between the first balancer of a chain and balancer k: the round
// trips of the links in front of k summed (0 for the first).
func (r *Run) viaRTT(k int) time.Duration {
	var d time.Duration
	for i := 0; i < k && i < len(r.params.Tiers); i++ {
		d += dur(r.params.Tiers[i].BackendNetwork.RTT)
	}
	return d
}

func dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

// ms renders a scenario-time instant or length in milliseconds, one decimal.
func ms(v float64) string { return fmt.Sprintf("%.1f ms", v) }

func msD(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// relative says how far a is from b in words, with the sign carried by the words.
func relative(a, b float64, what string) string {
	switch d := a - b; {
	case d > 0:
		return fmt.Sprintf("%s after %s", ms(d), what)
	case d < 0:
		return fmt.Sprintf("%s before %s", ms(-d), what)
	}
	return "exactly at " + what
}

// prev is the request before i that the same client sent: in a replay run each recorded
// client has its own pool, so only its own requests leave connections for it (in any other
// run every request has the one client); -1 when none did.
func (r *Run) prev(i int) int {
	c := r.Requests[i].Client
	for j := i - 1; j >= 0; j-- {
		if r.Requests[j].Client == c {
			return j
		}
	}
	return -1
}

// prevResponse finds the last request before index i that carried a response (any status)
// on client connection conn; -1 when none did.
func (r *Run) prevResponse(i int, conn uint64) int {
	for j := i - 1; j >= 0; j-- {
		if q := r.Requests[j]; q.Conn == conn && q.Status > 0 {
			return j
		}
	}
	return -1
}

// serverConn finds the server's record of the connection a request rode: by the server's
// id when the request names it, else by the client's id.
func (r *Run) serverConn(serverID, clientID uint64) *report.Conn {
	for k := range r.Conns {
		c := &r.Conns[k]
		if c.Side != "server" && c.Side != "proxy" {
			continue
		}
		if (serverID != 0 && c.ID == serverID) || (serverID == 0 && clientID != 0 && c.ClientConn == clientID) {
			return c
		}
	}
	return nil
}

func (r *Run) sequential() bool { return r.params.Load.Concurrency <= 1 }

// clientName is the client as the text names it: its preset, else the real program that
// ran (an exec adapter, or the user's command), else kalab's own client of that kind.
func (r *Run) clientName() string {
	if p := r.params.Client.Preset; p != "" {
		return p
	}
	if c := r.Record.Client; c != nil {
		if c.Adapter != "" {
			return c.Adapter
		}
		if len(c.Command) > 0 {
			return filepath.Base(c.Command[0])
		}
	}
	switch impl := r.params.Client.Implementation; {
	case r.h3():
		return "kalab's HTTP/3 client (quic-go)"
	case impl == "" || impl == "model":
		return "kalab's model client"
	default:
		return impl
	}
}
