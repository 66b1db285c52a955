package oracle

import (
	"fmt"
	"time"

	"github.com/kalab-dev/kalab/engine/fault"
)

// Metrics the oracle predicts, by their names in the metric vocabulary.
const (
	Errors             = "errors"
	Connections        = "connections"
	ReusedRequests     = "reused_requests"
	Retries            = "retries"
	HiddenRetries      = "hidden_retries"
	Status5xx          = "status_5xx"
	BalancerErrors     = "balancer_errors"
	BalancerRetries    = "balancer_retries"
	BackendErrors      = "backend_errors"
	BackendConnections = "backend_connections"
)

// singleHop and twoHop are the counts each topology predicts, in the order a summary
// lists them.
var (
	singleHop = []string{Errors, Connections, ReusedRequests, Retries, HiddenRetries}
	twoHop    = []string{Errors, Connections, Status5xx, BalancerErrors, BalancerRetries, BackendErrors, BackendConnections}
)

// Count is one predicted count.
type Count struct {
	Metric string `json:"metric"`
	// Predicted is false when the count depends on what the plan does not fix (scheduling,
	// a real program); Reason then says why.
	Predicted bool `json:"predicted"`
	// Value is the count the plan gives when every timer fires on time.
	Value int `json:"value"`
	// Lo and Hi bound the count when each pause within the allowed lateness of a window
	// edge may fall on either side of it; both equal Value with no lateness.
	Lo int `json:"lo"`
	Hi int `json:"hi"`
	// AtMost marks Value as an upper bound: scheduling can only lower the count (Lo is 0).
	AtMost bool `json:"at_most,omitempty"`
	// Reason is the rule that produced the count, or why it is not predicted.
	Reason string `json:"reason"`
	// Window is the interval of pauses the count depends on, in scenario time.
	Window string `json:"window,omitempty"`
	// Requests are the 0-based sequence numbers the rule puts into the count (races,
	// re-sends, 502s), when it names them.
	Requests []int `json:"requests,omitempty"`
	// Uncertain are the requests whose pause lies within the lateness of a window edge.
	Uncertain []int `json:"uncertain,omitempty"`
}

// Prediction is the oracle's account of one run.
type Prediction struct {
	// Rule names the model that applied (sequential, batches, no-reuse) or is empty.
	Rule   string  `json:"rule"`
	Counts []Count `json:"counts"`
	// LatenessMs is the lateness, in scenario milliseconds, the bounds allow for.
	LatenessMs float64 `json:"lateness_ms"`
}

// Count returns the named count and whether the prediction has it.
func (p Prediction) Count(metric string) (Count, bool) {
	for _, c := range p.Counts {
		if c.Metric == metric {
			return c, true
		}
	}
	return Count{}, false
}

// Predict computes the counts of a run from its plan. lateness is how late, in scenario
// time, the run's timers may have fired: a pause within it of a window edge may count on
// either side of the edge, and widens Lo..Hi by one. Predict with 0 gives the plan's counts.
func Predict(p Plan, lateness time.Duration) Prediction {
	names := singleHop
	if p.Balancer != nil {
		names = twoHop
	}
	if p.HTTP3 {
		return quicPredict(p, lateness)
	}
	p, why := reduceChain(p)
	if why != "" {
		return notPredicted(names, why, lateness)
	}
	if why := unpredictable(p); why != "" {
		return notPredicted(names, why, lateness)
	}
	if noReuse, why := neverReuses(p.Client, p.Server); noReuse && p.Balancer == nil {
		return reuseNone(p, why, lateness)
	}
	if p.Client.AwaitedCreationOrder {
		return awaited(p, lateness)
	}
	if p.Concurrency > 1 {
		if fault.On(fault.OracleBatchesDropped) {
			return notPredicted(names, "batches not modelled", lateness)
		}
		return batches(p, lateness)
	}
	return sequential(p, lateness)
}

func notPredicted(names []string, why string, lateness time.Duration) Prediction {
	out := Prediction{LatenessMs: ms(lateness)}
	for _, n := range names {
		out.Counts = append(out.Counts, Count{Metric: n, Reason: why})
	}
	return out
}

// unpredictable says why the plan's counts depend on more than the plan, or "".
func unpredictable(p Plan) string {
	if why := unmodelled(p); why != "" {
		return why
	}
	if noReuse, _ := neverReuses(p.Client, p.Server); noReuse && p.Balancer == nil {
		return "" // a connection per request whatever the schedule
	}
	if why := timingDependent(p); why != "" {
		return why
	}
	return orderDependent(p)
}

// unmodelled says why the plan names something the oracle does not model, or asks for no
// requests at all, or "". It holds even for a client that never reuses a connection.
func unmodelled(p Plan) string {
	switch {
	case p.Client.Real != "":
		return fmt.Sprintf("a real client (%s): its own rules decide, the truth suite compares them with the model", p.Client.Real)
	case p.Server.Real != "":
		return fmt.Sprintf("a real server (%s): its own timers decide when it closes", p.Server.Real)
	case p.Balancer.real() != "":
		return fmt.Sprintf("a real balancer (%s): its own rules decide, the truth suite compares them with the model", p.Balancer.real())
	case p.Server.HTTP2:
		return "HTTP/2 multiplexes requests on one connection; the oracle models HTTP/1.1 pools"
	case p.Client.DropEmptyPool && p.Server.MaxRequests > 0:
		// The Agent's count falls to zero while a client reconnects in place, and that client
		// closes a connection it would have kept: engine/client's Go tests and the truth
		// suite check the chain that follows. Without a close after a kept response it only
		// changes which Pool a new connection belongs to (its TLS session cache), not the
		// counts predicted here.
		return "undici 7's Agent closing the origin's pool (client.drop_empty_pool) under server.max_requests: the chain of pools it starts is not walked here"
	case p.Server.Status >= 500 && p.Balancer != nil:
		return fmt.Sprintf("the server answers %d itself: the balancer's own error answers cannot be told from the server's", p.Server.Status)
	case p.Server.CloseEvery > 0:
		return "server.close_every closes connections at instants the plan does not fix"
	case p.Server.Events > 0:
		return "server.events: a reload, drain, restart or deregistration closes connections outside the idle and per-connection rules the oracle walks"
	case p.Backlog:
		return "a modelled listen queue: which connections overflow depends on accept timing"
	case p.Replay != "":
		return fmt.Sprintf("a replay of %s: each recorded client's own gaps decide its races, and the oracle predicts from a schedule's pauses only", p.Replay)
	case p.Middlebox != nil:
		return middleboxUnmodelled(p)
	case p.Requests < 1:
		return "no requests"
	}
	return ""
}

// timingDependent says why, when connections are reused, the counts depend on timing the
// plan does not fix (open-model arrivals, jitter, an idle timeout within a round trip), or "".
func timingDependent(p Plan) string {
	switch {
	case p.OpenModel:
		return "open-model arrivals: which requests overlap depends on response times, not only on the plan"
	case p.Jitter > 0 || (p.Balancer != nil && p.Balancer.BackendJitter > 0):
		return "jitter moves each delivery by a random amount the plan does not fix"
	case p.Server.IdleTimeout > 0 && p.Server.IdleTimeout <= p.RTT:
		return "the server's idle timeout is within one round trip: every request races it"
	case p.Client.Timeout > 0 && p.Client.Timeout <= p.Server.Delay+4*p.RTT:
		return fmt.Sprintf("the client's timeout (%s) is within a request's own time (the server's %s delay and the round trips): which requests time out is not modelled", fmtD(p.Client.Timeout), fmtD(p.Server.Delay))
	}
	return ""
}

// orderDependent says why, when connections are reused, the counts depend on the order in
// which requests arrive or complete (concurrency, a balancer's reuse or error handling), or "".
func orderDependent(p Plan) string {
	switch {
	case p.Concurrency > 1 && p.Balancer != nil:
		return "concurrency through a balancer: which backend connection a request gets depends on arrival order"
	case p.Concurrency > 1 && (p.Burst == 0 || p.Burst > p.Concurrency):
		return fmt.Sprintf("%d in flight over bursts of %d: which request finds a free connection depends on response order (cold bursts, Go's dial race)", p.Concurrency, p.Burst)
	case p.Balancer != nil && p.Balancer.OnBackendError == "close":
		return "the balancer closes the client connection on a backend error: what the client does next is its own race"
	case p.Balancer != nil && p.Balancer.Reuse != "" && p.Balancer.Reuse != "always":
		return fmt.Sprintf("balancer reuse %q: which requests may reuse a backend connection depends on their order", p.Balancer.Reuse)
	}
	return ""
}

// neverReuses reports whether the client opens a connection for every request: keep-alive
// off, or a Keep-Alive hint that leaves no time to pool (hint − buffer ≤ 0, Node's
// _http_agent.js keepSocketAlive and undici's client-h1.js).
func neverReuses(c Client, s Server) (bool, string) {
	if !c.KeepAlive {
		return true, "keep-alive off: a new connection for every request"
	}
	if c.HonorHint && s.HasHint && !c.GoTransport && s.Hint-c.HintBuffer <= 0 {
		return true, fmt.Sprintf("the server's Keep-Alive timeout=%v minus the client's %v buffer is %v ≤ 0: no connection is pooled", s.Hint, c.HintBuffer, s.Hint-c.HintBuffer)
	}
	if s.MaxRequests == 1 {
		return true, "the server closes every connection after one request"
	}
	return false, ""
}

// reuseNone predicts a client that never reuses: every request opens and rides its own
// connection, so nothing is stale and nothing races, at any concurrency.
func reuseNone(p Plan, why string, lateness time.Duration) Prediction {
	out := Prediction{Rule: "no-reuse", LatenessMs: ms(lateness)}
	for _, n := range singleHop {
		v := 0
		if n == Connections {
			v = p.Requests
		}
		out.Counts = append(out.Counts, exact(n, v, why))
	}
	return out
}

func exact(metric string, v int, why string) Count {
	return Count{Metric: metric, Predicted: true, Value: v, Lo: v, Hi: v, Reason: why}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtD renders a duration in milliseconds as the summaries do.
func fmtD(d time.Duration) string {
	return fmt.Sprintf("%g ms", float64(d.Round(100*time.Microsecond))/float64(time.Millisecond))
}
