package oracle

import (
	"fmt"
	"slices"
	"time"
)

// tally is a set of counts and the requests each names.
type tally struct {
	n    map[string]int
	seqs map[string][]int
}

func newTally() tally { return tally{n: map[string]int{}, seqs: map[string][]int{}} }

func (t tally) add(metric string, seq int) {
	t.n[metric]++
	if metric != Connections && metric != BackendConnections && metric != ReusedRequests {
		t.seqs[metric] = append(t.seqs[metric], seq)
	}
}

// pools is the state between requests of a sequential run: whether the client (and the
// balancer) hold a connection, and how many requests each has carried.
type pools struct {
	front, back     bool
	frontN, backN   int
	frontOK, backOK bool // the connection was pooled after its last response
	inner           bool // behind a chain, the inner links' connections are open
	// backLate is how much longer than usual the balancer's backend connection waits for
	// the next request after the client's request failed on its own hop: the failure
	// arrives with the balancer's FIN, its idle timeout after the last response, and the
	// next request then opens a connection first (one round trip).
	backLate time.Duration
}

// seqModel walks a sequential run request by request.
type seqModel struct {
	p           Plan
	front, back hop
	clientRetry retryRule
}

// retryRule is what the client does when an attempt fails on a stale connection.
type retryRule struct {
	retry  bool
	metric string // retries or hidden_retries
	why    string
}

// clientRetry is the client's answer to a failed attempt on a reused connection that
// received no byte (the stale race fails as reset or eof, whichever the client reads first).
func clientRetry(c Client) (retryRule, string) {
	if c.GoTransport {
		if c.Retry.Attempts > 0 {
			return retryRule{}, "kalab's retry on top of Go's Transport: which layer re-sends first is not modelled"
		}
		if replayable(c.Method, c.IdempotencyKey) {
			return retryRule{true, HiddenRetries, "Go's Transport re-sends a replayable request that failed on a reused connection (transport.go shouldRetryRequest)"}, ""
		}
		return retryRule{false, "", fmt.Sprintf("Go's Transport does not re-send a %s without an Idempotency-Key (request.go isReplayable): the error reaches the caller", c.Method)}, ""
	}
	r := c.Retry
	if r.Attempts < 1 {
		return retryRule{false, "", "the client does not retry (retry.attempts 0): the error reaches the caller"}, ""
	}
	if slices.Contains(r.On, "reset") != slices.Contains(r.On, "eof") {
		return retryRule{}, "retry.on lists only one of reset and eof, and the race fails as either, whichever the client reads first"
	}
	if !slices.Contains(r.On, "reset") {
		return retryRule{false, "", "retry.on names neither reset nor eof: the error reaches the caller"}, ""
	}
	// retry.idempotent_only re-sends what engine/client's Idempotent allows: GET, HEAD,
	// OPTIONS, TRACE, or any method with an Idempotency-Key (Go's isReplayable).
	if r.IdempotentOnly && !replayable(c.Method, c.IdempotencyKey) {
		return retryRule{false, "", fmt.Sprintf("retry.idempotent_only and a %s without an Idempotency-Key is not replayable: the error reaches the caller", c.Method)}, ""
	}
	metric := Retries
	if r.Hidden {
		metric = HiddenRetries
	}
	return retryRule{true, metric, "the client retries a reset or eof on a new connection"}, ""
}

// clientKeep is how long the client pools a connection after a response, per its hint rule
// (engine/client pooledLifetime; Node's _http_agent.js keepSocketAlive, undici's
// client-h1.js): 0 is no limit.
func clientKeep(c Client, s Server) time.Duration {
	base := c.IdleTimeout
	if !c.HonorHint || !s.HasHint || c.GoTransport {
		return base
	}
	h := s.Hint - c.HintBuffer
	if c.HintParser == "undici" {
		if c.HintMax > 0 && h > c.HintMax {
			h = c.HintMax
		}
		return h
	}
	if base > 0 && h < base {
		return h
	}
	return base
}

// sequential predicts a run with one request in flight: each burst's first request finds
// the connection its previous burst left after the seeded pause, every other request finds
// it at once.
func sequential(p Plan, lateness time.Duration) Prediction {
	m := seqModel{p: p}
	m.front = hop{rtt: p.RTT, close: p.Server.IdleTimeout, keep: clientKeep(p.Client, p.Server), liveness: p.Client.LivenessCheck || p.Client.GoTransport}
	if b := p.Balancer; b != nil {
		m.front = hop{rtt: p.RTT, close: b.IdleTimeout, keep: m.front.keep, liveness: m.front.liveness}
		m.back = hop{rtt: b.BackendRTT, close: b.backClose(p.Server), keep: b.BackendIdle, liveness: b.BackendLiveness}
	}
	rule, why := clientRetry(p.Client)
	if why != "" {
		names := singleHop
		if p.Balancer != nil {
			names = twoHop
		}
		return notPredicted(names, why, lateness)
	}
	m.clientRetry = rule
	return m.predict(lateness)
}

// burstGaps are the gaps each hop sees before a burst's first request: the pause on the
// client's link, the pause plus the client's round trip at the balancer's backend pool
// (the response travels RTT/2 to the client, the next request RTT/2 back), and behind a
// chain the inner links' round trips too.
func (m seqModel) burstGaps(pause time.Duration) (front, back time.Duration) {
	return pause, pause + m.p.RTT + m.p.Balancer.via()
}

func (m seqModel) predict(lateness time.Duration) Prediction {
	burst := m.p.Burst
	if burst <= 0 || burst > m.p.Requests {
		burst = m.p.Requests
	}
	lo, hi, nominal := newTally(), newTally(), newTally()
	uncertain := map[string][]int{}
	var st pools
	for start, b := 0, 0; start < m.p.Requests; start, b = start+burst, b+1 {
		size := min(burst, m.p.Requests-start)
		fo, bo := []outcome{fresh}, []outcome{fresh}
		if b > 0 && b-1 < len(m.p.Pauses) {
			gf, gb := m.burstGaps(m.p.Pauses[b-1])
			gb += st.backLate
			fo, bo = m.front.alternatives(gf, lateness), m.back.alternatives(gb, lateness)
			fo = m.boxAlternatives(fo, gf, lateness)
		}
		next, t := m.burst(st, start, size, fo[0], bo[0])
		merge(nominal, t)
		least, most := t, t
		for _, f := range fo {
			for _, o := range bo {
				_, alt := m.burst(st, start, size, f, o)
				least, most = minTally(least, alt), maxTally(most, alt)
			}
		}
		for k := range m.names() {
			if least.n[k] != most.n[k] {
				uncertain[k] = append(uncertain[k], start)
			}
		}
		merge(lo, least)
		merge(hi, most)
		st = next
	}
	return m.result(nominal, lo, hi, uncertain, lateness)
}

func (m seqModel) names() map[string]bool {
	out := map[string]bool{}
	names := singleHop
	if m.p.Balancer != nil {
		names = twoHop
	}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// burst runs one burst from state st, its first request meeting outcomes fo and bo.
func (m seqModel) burst(st pools, start, size int, fo, bo outcome) (pools, tally) {
	t := newTally()
	for i := range size {
		f, o := reuse, reuse
		if i == 0 {
			f, o = fo, bo
		} else if m.p.Balancer != nil {
			o = m.back.classify(m.p.RTT + m.p.Balancer.via() + st.backLate) // the next request reaches the balancer one client round trip (and the inner links' round trips) later
		}
		st = m.request(st, start+i, f, o, t)
	}
	return st, t
}

// request plays one request; f and o are what its client and backend connections meet.
func (m seqModel) request(st pools, seq int, f, o outcome, t tally) pools {
	if !st.front || !st.frontOK {
		f = fresh
	}
	switch f {
	case fresh:
		t.add(Connections, seq)
		st.frontN = 0
	case race:
		if !m.clientRetry.retry {
			t.add(Errors, seq)
			if m.p.Balancer == nil {
				t.add(ReusedRequests, seq)
			}
			st.front = false
			st.backLate += m.front.close + m.p.RTT
			return st
		}
		t.add(m.clientRetry.metric, seq)
		t.add(Connections, seq)
		st.frontN = 0
		if m.p.Balancer != nil {
			// The re-sent request reaches the balancer when the failure arrived (the
			// balancer's FIN, its idle timeout after the last response) and a connection
			// was opened: the balancer's idle timeout and two client round trips after its
			// backend connection carried the last response.
			o = m.back.classify(m.front.close + 2*m.p.RTT + m.p.Balancer.via() + st.backLate)
		}
	case void:
		// No client retry covers the hang (middleboxUnmodelled refuses one that would).
		t.add(Errors, seq)
		t.add(ReusedRequests, seq)
		st.front = false
		return st
	case reuse:
		if m.p.Balancer == nil {
			t.add(ReusedRequests, seq)
		}
	}
	if m.p.Balancer != nil {
		st = m.backend(st, seq, o, t)
	}
	st.frontN++
	st.front = true
	st.frontOK = m.p.Client.KeepAlive && (m.p.Balancer != nil || m.p.Server.MaxRequests == 0 || st.frontN < m.p.Server.MaxRequests)
	return st
}

// backend plays a request's hop from the balancer to the server: a stale backend
// connection makes the balancer re-send (retry_idempotent, an idempotent method) or answer
// its error status itself.
func (m seqModel) backend(st pools, seq int, o outcome, t tally) pools {
	b := m.p.Balancer
	if !st.inner {
		// Behind a chain each other link opens one connection, which carries every request
		// (reduceChain refuses a second link that could close).
		for range b.others {
			t.add(BackendConnections, seq)
		}
		st.inner = true
	}
	if !st.back || !st.backOK {
		o = fresh
	}
	switch o {
	case fresh:
		t.add(BackendConnections, seq)
		st.backN = 0
	case race:
		t.add(BackendErrors, seq)
		if b.OnBackendError == "retry_idempotent" && b.Retries > 0 && idempotent(m.p.Client.Method) {
			t.add(BalancerRetries, seq)
			t.add(BackendConnections, seq)
			st.backN = 0
			break
		}
		t.add(BalancerErrors, seq)
		if b.ErrorStatus >= 500 {
			t.add(Status5xx, seq)
		}
		st.back = false
		return st
	}
	st.backN++
	st.backLate = 0
	st.back = true
	st.backOK = b.BackendKeepAlive && (b.toBalancer || m.p.Server.MaxRequests == 0 || st.backN < m.p.Server.MaxRequests)
	return st
}

func merge(into, t tally) {
	for k, v := range t.n {
		into.n[k] += v
	}
	for k, v := range t.seqs {
		into.seqs[k] = append(into.seqs[k], v...)
	}
}

func minTally(a, b tally) tally { return pick(a, b, func(x, y int) bool { return x <= y }) }
func maxTally(a, b tally) tally { return pick(a, b, func(x, y int) bool { return x >= y }) }

// pick keeps, metric by metric, the count that better satisfies keep.
func pick(a, b tally, keep func(x, y int) bool) tally {
	out := newTally()
	for _, t := range []tally{a, b} {
		for k := range t.n {
			if keep(a.n[k], b.n[k]) {
				out.n[k] = a.n[k]
			} else {
				out.n[k] = b.n[k]
			}
		}
	}
	return out
}

func (m seqModel) result(nominal, lo, hi tally, uncertain map[string][]int, lateness time.Duration) Prediction {
	names := singleHop
	if m.p.Balancer != nil {
		names = twoHop
	}
	return walked("sequential", names, nominal, lo, hi, uncertain, lateness, m.explain)
}

// walked is a request walk's prediction: each count's nominal value, its bracket across the
// lateness, the requests it names and the rule behind it (explain).
func walked(rule string, names []string, nominal, lo, hi tally, uncertain map[string][]int, lateness time.Duration,
	explain func(metric string) (reason, window string)) Prediction {
	out := Prediction{Rule: rule, LatenessMs: ms(lateness)}
	for _, n := range names {
		c := Count{Metric: n, Predicted: true, Value: nominal.n[n], Lo: lo.n[n], Hi: hi.n[n],
			Requests: nominal.seqs[n], Uncertain: uncertain[n]}
		c.Reason, c.Window = explain(n)
		out.Counts = append(out.Counts, c)
	}
	return out
}

// explain is the rule behind a sequential count and the window it depends on.
func (m seqModel) explain(metric string) (reason, window string) {
	if reason, window, ok := m.explainBox(metric); ok {
		return reason, window
	}
	clientWin := m.front.window("a pause")
	switch metric {
	case Errors:
		if m.clientRetry.retry {
			return "every request that races the close is re-sent: " + m.clientRetry.why, clientWin
		}
		return "each burst whose pause races the close loses its first request: " + m.clientRetry.why, clientWin
	case Retries, HiddenRetries:
		if m.clientRetry.retry && m.clientRetry.metric == metric {
			return "one per request that races the close: " + m.clientRetry.why, clientWin
		}
		return "nothing re-sends this way: " + m.clientRetry.why, ""
	case Connections:
		return m.connReason(), clientWin
	case ReusedRequests:
		return "requests whose final attempt rode a pooled connection (a failed race counts: it was sent on one)", clientWin
	}
	backWin := m.back.window("a pause + the client's RTT")
	b := m.p.Balancer
	bal, relay, inner, far := "the balancer", "", "", "the server"
	if b.toBalancer {
		far = "the next balancer"
	}
	if b.others > 0 {
		backWin = m.back.window("a pause + the round trips in front of the link")
		bal = "the balancer whose backend link may close (" + b.Name + ")"
		relay = ", and the balancers in front of it pass its answer on"
		inner = fmt.Sprintf(", plus one for each of the chain's %d other links, which stay open", b.others)
		if b.others == 1 {
			inner = ", plus one for the chain's other link, which stays open"
		}
	}
	switch metric {
	case Status5xx, BalancerErrors:
		return fmt.Sprintf("%s answers %d for each request it sends on a backend connection %s has closed, unless it re-sends (on_backend_error %s)%s", bal, b.ErrorStatus, far, b.OnBackendError, relay), backWin
	case BalancerRetries:
		return bal + " re-sends an idempotent request that failed on a stale backend connection (on_backend_error retry_idempotent)", backWin
	case BackendErrors:
		return "one per request " + bal + " sends on a backend connection " + far + " has closed", backWin
	case BackendConnections:
		return "one at the start, one after each backend race, and one after each pause the server's FIN (or the balancer's own idle limit) ended" + inner, backWin
	}
	return "", ""
}

func (m seqModel) connReason() string {
	s := "one at the start"
	if m.front.close > 0 || m.front.keep > 0 {
		who := "the server's"
		if m.p.Balancer != nil {
			who = "the balancer's"
		}
		s += ", one after each pause that outlasts the pool's limit (" + limitText(m.front, who) + ")"
		s += ", one after each race"
	}
	if m.p.Server.MaxRequests > 0 && m.p.Balancer == nil {
		s += fmt.Sprintf(", one after every %d requests (server.max_requests)", m.p.Server.MaxRequests)
	}
	return s
}

func limitText(h hop, who string) string {
	var parts []string
	if h.close > 0 {
		parts = append(parts, who+" FIN at "+fmtD(h.close))
	}
	if h.keep > 0 {
		parts = append(parts, "the client's idle limit "+fmtD(h.keep))
	}
	if len(parts) == 2 {
		return parts[0] + " or " + parts[1]
	}
	return parts[0]
}
