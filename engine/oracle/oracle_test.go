package oracle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms1 = time.Millisecond

// staleRace is a hand-sized stale-race plan: 150 ms RTT, a 2 s idle close, bursts of 2 and
// three pauses: 1,700 ms (reused safely: below idle − RTT = 1,850), 1,900 ms (inside
// (1,850, 2,000): races) and 2,100 ms (the FIN came back at 2,000: a new connection).
func staleRace() Plan {
	return Plan{
		Requests: 8, Burst: 2, RTT: 150 * ms1,
		Pauses: []time.Duration{1700 * ms1, 1900 * ms1, 2100 * ms1},
		Server: Server{IdleTimeout: 2 * time.Second},
		Client: Client{KeepAlive: true, HonorHint: true, HintParser: "node", HintBuffer: time.Second, LivenessCheck: true, Method: "GET"},
	}
}

type want map[string]int

func check(t *testing.T, name string, got Prediction, w want) {
	t.Helper()
	for metric, v := range w {
		c, ok := got.Count(metric)
		if !ok || !c.Predicted {
			t.Errorf("%s: %s not predicted (%s)", name, metric, c.Reason)
			continue
		}
		if c.Value != v {
			t.Errorf("%s: %s = %d, worked by hand %d (%s)", name, metric, c.Value, v, c.Reason)
		}
	}
}

func TestStaleRaceByHand(t *testing.T) {
	t.Parallel()
	// req 0 dials, 1 reuses; 2-3 reuse after 1,700; 4 races after 1,900 and fails on its
	// reused connection, 5 dials; 6 dials after 2,100 (FIN seen), 7 reuses.
	got := Predict(staleRace(), 0)
	check(t, "node-agent", got, want{Errors: 1, Connections: 3, ReusedRequests: 5, Retries: 0, HiddenRetries: 0})
	if c, _ := got.Count(Errors); !slices.Equal(c.Requests, []int{4}) || c.Window == "" {
		t.Errorf("errors name requests %v, window %q; want [4] and a window", c.Requests, c.Window)
	}

	p := staleRace()
	p.Client.Retry = Retry{Attempts: 1, On: []string{"reset", "eof"}, IdempotentOnly: true}
	// 4's retry dials (conn 2) and 5 reuses it.
	check(t, "one-retry", Predict(p, 0), want{Errors: 0, Retries: 1, Connections: 3, ReusedRequests: 5})

	p = staleRace()
	p.Client.IdleTimeout = 1800 * ms1                                                        // 1,900 and 2,100 both outlast it: dropped, no race
	check(t, "idle-1800", Predict(p, 0), want{Errors: 0, Connections: 3, ReusedRequests: 5}) // 1, 2, 3, 5, 7

	p = staleRace()
	p.Client.LivenessCheck = false // 2,100: the FIN is in but the pool does not look
	check(t, "no-liveness", Predict(p, 0), want{Errors: 2, Connections: 3})
}

func TestGoTransportReSendsOnlyReplayable(t *testing.T) {
	t.Parallel()
	p := staleRace()
	p.Client = Client{GoTransport: true, KeepAlive: true, IdleTimeout: 90 * time.Second, MaxIdle: 2, Method: "GET"}
	check(t, "go GET", Predict(p, 0), want{Errors: 0, HiddenRetries: 1, Connections: 3})
	p.Client.Method = "POST"
	check(t, "go POST", Predict(p, 0), want{Errors: 1, HiddenRetries: 0, Connections: 3})
	p.Client.Method, p.Client.BodyBytes = "GET", 10
	// A body Go can read again (GetBody, as kalab's client sets it) keeps a GET replayable.
	check(t, "go GET with body", Predict(p, 0), want{Errors: 0, HiddenRetries: 1})
	p.Client.Method, p.Client.IdempotencyKey = "POST", true
	check(t, "go POST with an Idempotency-Key", Predict(p, 0), want{Errors: 0, HiddenRetries: 1})
}

// A client timeout within a request's own time decides which requests fail by timing the
// oracle does not model: not predicted, never a guess.
func TestTimeoutWithinTheResponseNotPredicted(t *testing.T) {
	t.Parallel()
	p := staleRace()
	p.Server.Delay, p.Client.Timeout = time.Second, time.Second
	if c, _ := Predict(p, 0).Count(Errors); c.Predicted || !strings.Contains(c.Reason, "client's timeout") {
		t.Errorf("timeout 1 s, delay 1 s: errors predicted %v (%q); want not predicted", c.Predicted, c.Reason)
	}
	p.Client.Timeout = 10 * time.Second
	check(t, "timeout well past the response", Predict(p, 0), want{Errors: 1})
}

// A pause within the lateness of an edge may count either way, and only such a pause.
func TestLatenessWidensOnlyNearEdges(t *testing.T) {
	t.Parallel()
	// 1,900 is 50 ms inside 1,850; 1,700 and 2,100 are 150 and 100 ms from any edge.
	got := Predict(staleRace(), 60*ms1)
	c, _ := got.Count(Errors)
	if c.Value != 1 || c.Lo != 0 || c.Hi != 1 || !slices.Equal(c.Uncertain, []int{4}) {
		t.Errorf("errors at 60 ms lateness: %d in %d..%d, uncertain %v; want 1 in 0..1, [4]", c.Value, c.Lo, c.Hi, c.Uncertain)
	}
	got = Predict(staleRace(), 40*ms1)
	if c, _ := got.Count(Errors); c.Lo != 1 || c.Hi != 1 || len(c.Uncertain) != 0 {
		t.Errorf("errors at 40 ms lateness: %d..%d, uncertain %v; want 1..1", c.Lo, c.Hi, c.Uncertain)
	}
	// 110 ms reaches 2,000 from 2,100 too: the FIN may not be in yet, and a third pause
	// races (errors up to 2); connections stay 3 whichever way each goes.
	got = Predict(staleRace(), 110*ms1)
	if c, _ := got.Count(Errors); c.Lo != 0 || c.Hi != 2 {
		t.Errorf("errors at 110 ms lateness: %d..%d; want 0..2", c.Lo, c.Hi)
	}
}

func TestHintRules(t *testing.T) {
	t.Parallel()
	p := staleRace()
	p.Server.Hint, p.Server.HasHint = time.Second, true
	// Node: timeout=1 minus its 1 s buffer is 0: nothing pooled.
	check(t, "node timeout=1", Predict(p, 0), want{Errors: 0, Connections: 8, ReusedRequests: 0})
	p.Client.HintParser, p.Client.HintBuffer, p.Client.IdleTimeout = "undici", 2*time.Second, 4*time.Second
	check(t, "undici timeout=1", Predict(p, 0), want{Connections: 8})
	p.Client.HonorHint = false
	check(t, "hint ignored", Predict(p, 0), want{Errors: 1, Connections: 3})

	for _, c := range []struct {
		name       string
		cl         Client
		hint, want time.Duration
	}{
		{"node agent, no timeout: the hint never shortens none", Client{HonorHint: true, HintParser: "node", HintBuffer: time.Second}, 5 * time.Second, 0},
		{"node global agent: 5 s − 1 s < 5 s", Client{HonorHint: true, HintParser: "node", HintBuffer: time.Second, IdleTimeout: 5 * time.Second}, 5 * time.Second, 4 * time.Second},
		{"undici: 5 s − 2 s replaces 4 s", Client{HonorHint: true, HintParser: "undici", HintBuffer: 2 * time.Second, IdleTimeout: 4 * time.Second, HintMax: 600 * time.Second}, 5 * time.Second, 3 * time.Second},
		{"undici: capped by keepAliveMaxTimeout", Client{HonorHint: true, HintParser: "undici", HintBuffer: 2 * time.Second, HintMax: 600 * time.Second}, 1000 * time.Second, 600 * time.Second},
	} {
		if got := clientKeep(c.cl, Server{Hint: c.hint, HasHint: true}); got != c.want {
			t.Errorf("%s: keeps %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMaxRequestsAndNoKeepAlive(t *testing.T) {
	t.Parallel()
	p := Plan{Requests: 7, RTT: 10 * ms1, Server: Server{MaxRequests: 3}, Client: Client{KeepAlive: true, Method: "GET"}}
	check(t, "max 3", Predict(p, 0), want{Connections: 3, ReusedRequests: 4, Errors: 0})
	p.Client.KeepAlive = false
	p.Concurrency, p.OpenModel = 50, true // a connection per request at any concurrency
	check(t, "no keep-alive", Predict(p, 0), want{Connections: 7, ReusedRequests: 0})
}

func TestBatches(t *testing.T) {
	t.Parallel()
	p := Plan{Requests: 500, Concurrency: 10, Burst: 10, RTT: 10 * ms1,
		Server: Server{IdleTimeout: 5 * time.Second},
		Client: Client{GoTransport: true, KeepAlive: true, IdleTimeout: 90 * time.Second, MaxIdle: 2, Method: "GET"}}
	for i := 0; i < 49; i++ {
		p.Pauses = append(p.Pauses, 20*ms1)
	}
	// 10 + 49 × 8 = 402.
	got := Predict(p, 0)
	check(t, "pool of 2", got, want{Connections: 402, Errors: 0})
	if c, _ := got.Count(Connections); !c.AtMost {
		t.Error("a batch count must be an upper bound: Go's dial race can only lower it")
	}
	p.Client.MaxIdle = 10
	check(t, "pool of 10", Predict(p, 0), want{Connections: 10})
	p.Client.MaxIdle, p.Requests, p.Pauses = 2, 95, p.Pauses[:9]
	// 10, then 8 batches dialling 8, then a last batch of 5 finding 2: 10 + 64 + 3.
	check(t, "short last batch", Predict(p, 0), want{Connections: 77})
	p.Burst = 20
	if c, _ := Predict(p, 0).Count(Connections); c.Predicted {
		t.Error("bursts larger than the concurrency depend on response order: must not be predicted")
	}
}

// The two-hop race: a pause p races the backend close when p + client RTT lies in
// (close − backend RTT, close) = (5,600, 6,000) ms.
func TestBalancerByHand(t *testing.T) {
	t.Parallel()
	p := Plan{
		Requests: 8, Burst: 2, RTT: 20 * ms1,
		Pauses: []time.Duration{5000 * ms1, 5700 * ms1, 6100 * ms1},
		Server: Server{IdleTimeout: 6 * time.Second},
		Client: Client{KeepAlive: true, LivenessCheck: true, Method: "GET"},
		Balancer: &Balancer{IdleTimeout: 60 * time.Second, BackendRTT: 400 * ms1, BackendKeepAlive: true,
			BackendIdle: 60 * time.Second, BackendLiveness: true, OnBackendError: "error", Retries: 1, ErrorStatus: 502, Reuse: "always"},
	}
	// 5,020 reuses; 5,720 races (request 4 gets a 502, 5 dials); 6,120 dials.
	got := Predict(p, 0)
	check(t, "alb", got, want{Errors: 0, Connections: 1, Status5xx: 1, BalancerErrors: 1, BackendErrors: 1, BalancerRetries: 0, BackendConnections: 3})
	if c, _ := got.Count(Status5xx); !slices.Equal(c.Requests, []int{4}) {
		t.Errorf("502s name %v, want [4]", c.Requests)
	}
	p.Balancer.OnBackendError, p.Balancer.Retries = "retry_idempotent", 16
	check(t, "nginx GET", Predict(p, 0), want{Status5xx: 0, BalancerRetries: 1, BackendErrors: 1, BackendConnections: 3})
	p.Client.Method = "POST"
	check(t, "nginx POST", Predict(p, 0), want{Status5xx: 1, BalancerRetries: 0, BackendConnections: 3})
}

// The client's own hop races the balancer's 60 s idle close (100 ms RTT: window (59.9 s,
// 60 s)); the balancer's backend pool keeps a connection 60.15 s. The failure arrives with
// the balancer's FIN, 60 s after the last response; the next request (or the client's
// re-send) opens a connection (100 ms) and reaches the balancer 50 ms later: its backend
// connection has then waited 60 s + 2 × 100 ms = 60.2 s since the last response, past the
// pool's 60.15 s, so it opens a new one. The pause alone (+ RTT) would say 60.05 s: reuse.
func TestBalancerAfterAFailureOnTheClientHop(t *testing.T) {
	t.Parallel()
	p := Plan{
		Requests: 4, Burst: 2, RTT: 100 * ms1,
		Pauses: []time.Duration{59950 * ms1},
		Server: Server{IdleTimeout: 120 * time.Second},
		Client: Client{KeepAlive: true, LivenessCheck: true, Method: "GET"},
		Balancer: &Balancer{IdleTimeout: 60 * time.Second, BackendKeepAlive: true,
			BackendIdle: 60150 * ms1, BackendLiveness: true, OnBackendError: "error", ErrorStatus: 502, Reuse: "always"},
	}
	check(t, "no retry", Predict(p, 0), want{Errors: 1, Connections: 2, BackendConnections: 2})
	p.Client.Retry = Retry{Attempts: 1, On: []string{"reset", "eof"}}
	check(t, "retry", Predict(p, 0), want{Errors: 0, Connections: 2, BackendConnections: 2})
	p.Balancer.BackendIdle = 60250 * ms1 // the 60.2 s wait is under it: one backend connection
	check(t, "pool keeps it", Predict(p, 0), want{Errors: 0, Connections: 2, BackendConnections: 1})
}

func TestNotPredicted(t *testing.T) {
	t.Parallel()
	for name, mut := range map[string]func(*Plan){
		"real client": func(p *Plan) { p.Client.Real = "node" },
		"open model":  func(p *Plan) { p.OpenModel = true },
		"jitter":      func(p *Plan) { p.Jitter = ms1 },
		"http2":       func(p *Plan) { p.Server.HTTP2 = true },
		"replay":      func(p *Plan) { p.Replay = "access.log" },
		"one retry class": func(p *Plan) {
			p.Client.Retry = Retry{Attempts: 1, On: []string{"reset"}}
		},
	} {
		p := staleRace()
		mut(&p)
		for _, c := range Predict(p, 0).Counts {
			if c.Predicted || c.Reason == "" {
				t.Errorf("%s: %s predicted=%v reason %q; want not predicted, with a reason", name, c.Metric, c.Predicted, c.Reason)
			}
		}
	}
}

// undici is the undici preset's client driven by an awaited loop (no caller_yields).
func undici() Client {
	return Client{KeepAlive: true, IdleTimeout: 4 * time.Second, HonorHint: true, HintParser: "undici", HintBuffer: 2 * time.Second,
		HintMax: 600 * time.Second, LivenessCheck: true, AwaitedCreationOrder: true, Method: "GET"}
}

// An awaited loop alternates between two clients of undici's pool: the client whose
// response just arrived is busy for the next request, which opens a second connection;
// the first is free again for the one after.
func TestAwaitedCreationOrderByHand(t *testing.T) {
	t.Parallel()
	p := Plan{Requests: 8, RTT: 50 * ms1, Server: Server{IdleTimeout: 5 * time.Second, TLS: "1.3"}, Client: undici()}
	got := Predict(p, 0)
	check(t, "8 back to back", got, want{Errors: 0, Connections: 2, ReusedRequests: 6, Retries: 0, HiddenRetries: 0})
	if got.Rule != "creation-order" {
		t.Errorf("rule %q, want creation-order", got.Rule)
	}

	// The server closes after n requests with Connection: close: the closing client is held
	// for the next request all the same, so the two clients keep alternating and each
	// connection carries n requests (A: 0, 2, ..., 2n-2; B: 1, 3, ..., 2n-1), then both
	// reconnect in place.
	p.Requests = 40
	for n, conns := range map[int]int{5: 8, 4: 10, 3: 14} {
		p.Server.MaxRequests = n
		check(t, fmt.Sprintf("max_requests %d", n), Predict(p, 0), want{Errors: 0, Connections: conns, ReusedRequests: 40 - conns})
	}

	// A hint that leaves nothing to pool (1 s − undici's 2 s): a connection per request.
	p.Server.MaxRequests, p.Server.Hint, p.Server.HasHint = 0, time.Second, true
	check(t, "hint 1 s", Predict(p, 0), want{Errors: 0, Connections: 40, ReusedRequests: 0})
}

// awaitedRace is a stale race over undici's pool: 150 ms RTT over plain TCP (a reused
// request takes 150 ms, a new connection 300), a 2 s idle close (race window (1,850,
// 2,000)), bursts of 5 and three pauses.
func awaitedRace() Plan {
	return Plan{Requests: 20, Burst: 5, RTT: 150 * ms1,
		Pauses: []time.Duration{1600 * ms1, 1900 * ms1, 1750 * ms1},
		Server: Server{IdleTimeout: 2 * time.Second}, Client: undici()}
}

// Each client's idle gap is the pause plus the time since its own last response. Times in
// ms from the start; A and B are the pool's two clients.
//
// Burst 0: r0 A dials (0-300), r1 B dials (300-600), r2 A, r3 B, r4 A reuse: A's last
// response at 1,050, B's at 900. Ends on A.
// Pause 1,600: r5 A, gap 1,600: reuses (2,650-2,800). r6 B, gap 2,800 − 900 = 1,900 (the
// pause and two requests): races and fails with the FIN at 2,900, freeing B at once. r7
// goes to A, first free (gap 100, reused, 3,050); r8 to B, which reconnects in place (c3,
// 3,350); r9 A reuses (3,500). Ends on A.
// Pause 1,900: r10 A, gap 1,900: races, fails at 5,500. r11 A reconnects (c4, 5,800); r12
// B, gap 5,800 − 3,350 = 2,450: its FIN is in, it reconnects (c5, 6,100); r13 A, r14 B
// reuse (6,250, 6,400). Ends on B.
// Pause 1,750: r15 A, gap 1,750 + 150 (B's last request) = 1,900: races, fails at 8,250;
// r16 A reconnects (c6, 8,550); r17 B, gap 8,550 − 6,400 = 2,150: FIN, reconnects (c7);
// r18, r19 reuse.
// Errors 3 (r6, r10, r15), 7 connections, 13 reused (3 + 4 + 3 + 3, the races included).
// A pool that reuses the connection the last request used (node-agent) races only the
// 1,900 ms pause.
func TestAwaitedCreationOrderStaleRaceByHand(t *testing.T) {
	t.Parallel()
	got := Predict(awaitedRace(), 0)
	check(t, "undici", got, want{Errors: 3, Connections: 7, ReusedRequests: 13, Retries: 0, HiddenRetries: 0})
	if c, _ := got.Count(Errors); !slices.Equal(c.Requests, []int{6, 10, 15}) || c.Window == "" {
		t.Errorf("errors name requests %v, window %q; want [6 10 15] and a window", c.Requests, c.Window)
	}
	p := awaitedRace()
	p.Client.AwaitedCreationOrder = false
	check(t, "one connection reused", Predict(p, 0), want{Errors: 1, Connections: 2})

	// At 60 ms lateness each 1,900 ms gap (50 ms inside 1,850) may reuse; the others lie
	// 100 ms or more from an edge. At 40 ms none moves.
	c, _ := Predict(awaitedRace(), 60*ms1).Count(Errors)
	if c.Value != 3 || c.Lo != 0 || c.Hi != 3 || !slices.Equal(c.Uncertain, []int{5, 10, 15}) {
		t.Errorf("errors at 60 ms lateness: %d in %d..%d, uncertain bursts %v; want 3 in 0..3, [5 10 15]", c.Value, c.Lo, c.Hi, c.Uncertain)
	}
	if c, _ := Predict(awaitedRace(), 40*ms1).Count(Errors); c.Lo != 3 || c.Hi != 3 || len(c.Uncertain) != 0 {
		t.Errorf("errors at 40 ms lateness: %d..%d, uncertain %v; want 3..3", c.Lo, c.Hi, c.Uncertain)
	}
}

// A new connection's handshake lengthens the other client's gap: connect 1 RTT, TLS 1.3
// one more, TLS 1.2 two (one once a session can be resumed).
func TestAwaitedCreationOrderHandshakes(t *testing.T) {
	t.Parallel()
	// Two bursts of 2, 100 ms RTT, a 1 s close (window (900, 1,000)), a 650 ms pause. Burst
	// 0: r0 A dials, r1 B dials, so A's gap before r2 is the pause plus r1's time.
	// Plain: r1 takes 200 ms, A's gap 850: reused, and B's (650 + 100) too.
	// TLS 1.3: 300 ms, A's gap 950: races; r3 goes to A, freed at once, which reconnects.
	// TLS 1.2: 400 ms, A's gap 1,050: its FIN is in, a new connection (400 ms), and B's gap
	// is 1,050 too. With tickets r1 resumes the session r0 got (300 ms): as TLS 1.3.
	p := Plan{Requests: 4, Burst: 2, RTT: 100 * ms1, Pauses: []time.Duration{650 * ms1},
		Server: Server{IdleTimeout: time.Second}, Client: undici()}
	check(t, "plain", Predict(p, 0), want{Errors: 0, Connections: 2})
	p.Server.TLS = "1.3"
	check(t, "tls 1.3", Predict(p, 0), want{Errors: 1, Connections: 3})
	p.Server.TLS = "1.2"
	check(t, "tls 1.2", Predict(p, 0), want{Errors: 0, Connections: 4})
	p.Server.SessionTickets, p.Client.SessionResumption = true, true
	check(t, "tls 1.2 resumed", Predict(p, 0), want{Errors: 1, Connections: 3})
}

func TestAwaitedCreationOrderNotPredicted(t *testing.T) {
	t.Parallel()
	for name, mut := range map[string]func(*Plan){
		"concurrency 2": func(p *Plan) { p.Concurrency = 2 },
		"jitter":        func(p *Plan) { p.Jitter = ms1 },
		"retry":         func(p *Plan) { p.Client.Retry = Retry{Attempts: 1, On: []string{"reset", "eof"}} },
		"max_idle 1":    func(p *Plan) { p.Client.MaxIdle = 1 },
		"bandwidth":     func(p *Plan) { p.Bandwidth = 10e6 },
		"large body":    func(p *Plan) { p.Server.BodyBytes = 100000 },
		"balancer": func(p *Plan) {
			p.Balancer = &Balancer{IdleTimeout: time.Minute, BackendKeepAlive: true, OnBackendError: "error", ErrorStatus: 502, Reuse: "always"}
		},
	} {
		p := awaitedRace()
		mut(&p)
		for _, c := range Predict(p, 0).Counts {
			if c.Predicted || c.Reason == "" {
				t.Errorf("%s: %s predicted=%v reason %q; want not predicted, with a reason", name, c.Metric, c.Predicted, c.Reason)
			}
		}
	}
}

// retry.idempotent_only re-sends what engine/client's Idempotent allows (GET, HEAD,
// OPTIONS, TRACE, or any method with an Idempotency-Key), not RFC 9110's idempotent list:
// a POST with a key is re-sent, a PUT without one is not.
func TestIdempotentOnlyFollowsTheKey(t *testing.T) {
	t.Parallel()
	p := staleRace()
	p.Client.Retry = Retry{Attempts: 1, On: []string{"reset", "eof"}, IdempotentOnly: true}
	for _, c := range []struct {
		method string
		key    bool
		errors int
	}{{"POST", true, 0}, {"POST", false, 1}, {"PUT", false, 1}, {"PUT", true, 0}, {"DELETE", false, 1}, {"GET", false, 0}} {
		p.Client.Method, p.Client.IdempotencyKey = c.method, c.key
		name := fmt.Sprintf("%s key=%v", c.method, c.key)
		check(t, name, Predict(p, 0), want{Errors: c.errors, Retries: 1 - c.errors, Connections: 3})
	}
}
