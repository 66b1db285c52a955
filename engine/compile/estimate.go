package compile

import (
	"math"
	"strings"
	"time"

	"github.com/kalab-dev/kalab/engine/configure"

	"github.com/kalab-dev/kalab/engine/execclient"
	"github.com/kalab-dev/kalab/engine/load"
	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/scenario"
	"github.com/kalab-dev/kalab/engine/shape"
)

// Costs the plan cannot see, in real time (not scaled): starting a run's server, proxy and
// client and letting the last connections close; the CPU of one request through client,
// proxy and server (the README's "a whole run": 58-103 µs); and of opening one connection.
const (
	estimateSetup      = 100 * time.Millisecond
	estimateCPURequest = 80 * time.Microsecond
	estimateCPUConn    = 150 * time.Microsecond
)

// estimateProcess is starting a real client's runtime, from the truth suite's real runs
// beside their models on this machine (loaded): once to ask its version, once to run the
// program, and once per request for a process-per-request adapter (curl-loop).
var estimateProcess = map[string]time.Duration{
	"node":    250 * time.Millisecond,
	"python3": 400 * time.Millisecond,
	"curl":    25 * time.Millisecond,
	// go version, then the go-http program kalab built before the run (a warm start of
	// the binary: 90 ms here; the build itself is not part of the run).
	"go": 150 * time.Millisecond,
}

// estimate is how long a run of st (its settings as compiled: the invocation's overrides
// applied) should take in real time, predicted from its plan alone (Run.Expected): the
// round trips each request pays (1 on a reused connection, 2 on a new plain one, 3 with
// TLS 1.3, 4 with TLS 1.2), the server's response delay, a balancer's backend round trip,
// the seeded pauses between bursts, the arrival rate, and a fixed CPU cost per request and
// per connection. A request opens a connection when the client keeps none
// (keepalive off, or a Keep-Alive hint it turns into an idle time of zero), when it is in
// the first wave, or when the pause before its burst outlives the idle timeout. It is an
// estimate for balancing shards, not a bound: races, retries and the machine's load are
// not in it.
func estimate(st scenario.Settings) time.Duration {
	scale := st.TimeScale
	if scale <= 0 {
		scale = 1
	}
	if st.Clock == scenario.ClockVirtual {
		scale = 0 // simulated time costs no wall time: only the CPU of its requests and connections
	}
	processes, perProcess := 0, time.Duration(0)
	if st.Client.Exec != nil {
		// A real client runs in real time, and behaves as its adapter fixes it.
		scale = 1
		processes, perProcess = execEstimate(&st)
	}
	n := max(st.Load.Requests, 0)
	c := requestCosts(st)
	total, conns := scheduleTime(st, c)
	if extra := serverCloses(st, n, conns); extra > 0 {
		total += time.Duration(extra) * (c.fresh - c.reused)
		conns += extra
	}
	total += listenWait(st)
	real := time.Duration(float64(total) * scale)
	// The settle wait after the client closes: its FINs cross the link.
	real += time.Duration(float64(c.rtt) * scale)
	real += estimateSetup + time.Duration(n)*estimateCPURequest + time.Duration(conns)*estimateCPUConn
	real += time.Duration(processes) * perProcess
	return real
}

// serverCloses is how many more connections than the schedule's own a server that closes
// after max_requests makes a client that pools open: one for every max_requests requests,
// and, for undici 7's Agent in an awaited loop without pauses (which closes the origin's pool when its
// connections fall to zero), one for every request once its first two connections have
// carried theirs.
func serverCloses(st scenario.Settings, n, conns int) int {
	m := st.Server.MaxRequests
	if m <= 0 || !pools(st) {
		return 0
	}
	want := (n + m - 1) / m
	if dropsEmptyPool(st) && n > 2*m && concurrencyOf(st.Load, n) == 1 && (st.Load.Burst == 0 || st.Load.Burst >= n) {
		// Only an awaited loop without pauses keeps a closed pool's sockets counted into the
		// next: bursts of 3 after 200 ms pauses under max_requests 2 (truth-undici-7-edges,
		// in-place) opened 6 connections for 12 requests, as a pool that reconnects in place.
		want = 2 + n - 2*m
	}
	return max(want-conns, 0)
}

// dropsEmptyPool reports whether the client is undici 7's Agent: the model's drop_empty_pool,
// or the node-fetch adapter running an undici 7 release.
func dropsEmptyPool(st scenario.Settings) bool {
	if x := st.Client.Exec; x != nil {
		return x.Adapter == "node-fetch" && strings.HasPrefix(x.Version, "7")
	}
	return st.Client.DropEmptyPool
}

// execEstimate applies what a real client's adapter fixes to st and returns how many
// processes it starts and what each costs.
func execEstimate(st *scenario.Settings) (processes int, perProcess time.Duration) {
	processes = 2
	perProcess = 300 * time.Millisecond // the user's own program: unknown
	a, ok := execclient.Lookup(st.Client.Exec.Adapter)
	if !ok {
		return processes, perProcess
	}
	perProcess = estimateProcess[a.Runtime]
	fixed := func(field string) (string, bool) { f, ok := a.Fixed[field]; return f.Value, ok }
	if v, ok := fixed("keepalive"); ok {
		st.Client.KeepAlive = v == "true"
	}
	if v, ok := fixed("honor_hint"); ok {
		st.Client.HonorHint = v == "true"
	}
	if v, ok := fixed("hint_buffer"); ok {
		if d, err := scenario.ParseDuration(v); err == nil {
			st.Client.HintBuffer = d
		}
	}
	if a.Name == "curl-loop" {
		processes += max(st.Load.Requests, 0)
	}
	return processes, perProcess
}

// costs are a request's scenario time on a reused and on a new connection.
type costs struct {
	rtt, reused, handshake, fresh time.Duration
	newRounds, reusedRounds       int // slow-start windows beyond one
}

func requestCosts(st scenario.Settings) costs {
	rtt := st.Network.RTT.D() + st.Network.Jitter.D()/2
	reused := rtt + st.Server.Response.Delay.D()
	handshake := rtt // SYN, SYN-ACK: a new plain request costs 2 RTT
	if st.Server.TLS {
		handshake += rtt
		if st.Server.TLSVersion == "1.2" {
			handshake += rtt
		}
	}
	for _, b := range st.Balancers() {
		// Behind each balancer every request also crosses its backend link, and pays the
		// link's handshake when the balancer keeps no backend connection (plain TCP).
		brtt := b.BackendNetwork.RTT.D() + b.BackendNetwork.Jitter.D()/2
		reused += brtt
		if !b.Backend.KeepAlive {
			reused += brtt
		}
	}
	// Slow start (netsim's sending model): a large body needs more windows than one, on
	// a new connection from initial_window segments; a reused one has its window grown
	// unless it sat idle longer than its RTO with slow_start_after_idle on. A bandwidth
	// limit adds each request's time on the wire.
	bodies := st.Server.Response.BodyBytes + st.Client.BodyBytes
	newRounds, grown := slowStartRounds(bodies, max(st.Network.InitialWindow, 1)*netsim.MSS)
	reusedRounds, _ := slowStartRounds(bodies, grown)
	if bw := float64(st.Network.Bandwidth); bw > 0 {
		wire := time.Duration(float64(bodies+1024) * 8 / bw * float64(time.Second))
		reused += wire
	}
	handshake += time.Duration(newRounds-reusedRounds) * rtt
	reused += time.Duration(reusedRounds) * rtt
	return costs{rtt: rtt, reused: reused, handshake: handshake, fresh: reused + handshake,
		newRounds: newRounds, reusedRounds: reusedRounds}
}

// scheduleTime is the scenario time of the schedule (bursts, waves of the concurrency,
// pauses) and how many connections it opens.
func scheduleTime(st scenario.Settings, c costs) (total time.Duration, conns int) {
	l := st.Load
	n := max(l.Requests, 0)
	if l.Replay != "" {
		// The recording's span, then its last request; a connection per client is not
		// known without reading the file again: count one per request as the bound.
		return l.ReplaySpan + c.fresh, n
	}
	size := n
	if l.Burst > 0 && l.Burst < n {
		size = l.Burst
	}
	pauses := load.Pauses(configure.Load(st, 1))
	conc := concurrencyOf(l, n)
	pools, idle := pools(st), effectiveIdle(st)
	for i, first := 0, 0; first < n; i, first = i+1, first+size {
		b := min(size, n-first)
		fromScratch := i == 0 || !pools || (idle > 0 && pauses[i-1] >= idle)
		if i > 0 {
			total += pauses[i-1] + middleboxHang(st, pauses[i-1], pools, idle, c)
			if st.Network.SlowStartAfterIdle && !fromScratch && pauses[i-1] > netsim.RTO(c.rtt) {
				// The window shrank while idle: count it back up from scratch.
				total += time.Duration(c.newRounds-c.reusedRounds) * c.rtt
			}
		}
		// A pool that keeps fewer idle connections than a wave needs (Go's 2 per host
		// against 10 in flight) opens the rest again each burst: its first wave pays a
		// handshake, as a burst from scratch does.
		short := pools && !fromScratch && st.Client.MaxIdle > 0 && min(b, conc) > st.Client.MaxIdle
		total += burstTime(l, b, conc, pools, fromScratch || short, c)
		conns += burstConns(st, b, conc, pools, fromScratch)
		if short {
			conns += min(b, conc) - st.Client.MaxIdle
		}
	}
	return total, conns
}

// middleboxHang is what a pause costs when a middlebox that drops idle flows forgets the
// pooled connection's flow during it: the next request hangs for the client's timeout, then
// a new connection carries it. Nothing when the client or server closed the connection
// first (idle), or the client's TCP keepalive probes refresh the flow in time (a real
// client's are its own: not counted).
func middleboxHang(st scenario.Settings, pause time.Duration, pools bool, idle time.Duration, c costs) time.Duration {
	mb := st.Middlebox
	for _, b := range st.Middleboxes() {
		if b.IdleTimeout > 0 && pause >= b.IdleTimeout.D() {
			mb = b // behind a chain, the first box on the path that forgot the flow decides
			break
		}
	}
	switch {
	case mb == nil || mb.OnExpiry != "drop" || mb.IdleTimeout <= 0 || !pools:
		return 0
	case st.Client.Exec != nil:
		return 0 // a real client sets its own TCP keepalive, which the plan does not say
	case idle > 0 && pause >= idle, pause < mb.IdleTimeout.D():
		return 0
	case st.Client.TCPKeepalive.Idle > 0 && st.Client.TCPKeepalive.Idle.D() < mb.IdleTimeout.D():
		return 0
	}
	return st.Client.Timeout.D() + c.handshake
}

// concurrencyOf is how many requests run at once.
func concurrencyOf(l scenario.Load, n int) int {
	if l.Concurrency <= 0 && l.Rate > 0 {
		return n // an open model with no cap
	}
	return max(l.Concurrency, 1)
}

// burstTime is the scenario time of one burst of b requests.
func burstTime(l scenario.Load, b, conc int, pools, fromScratch bool, c costs) time.Duration {
	if l.Rate > 0 {
		// Arrivals spread over the burst; the last one still needs its answer.
		t := time.Duration(float64(b-1)/l.Rate*float64(time.Second)) + c.reused
		if fromScratch || !pools {
			t += c.handshake
		}
		return t
	}
	waves := (b + conc - 1) / conc
	switch {
	case !pools:
		return time.Duration(waves) * c.fresh
	case fromScratch:
		return c.fresh + time.Duration(waves-1)*c.reused
	default:
		return time.Duration(waves) * c.reused
	}
}

// burstConns is how many connections one burst of b requests opens.
func burstConns(st scenario.Settings, b, conc int, pools, fromScratch bool) int {
	switch {
	case !pools:
		return b
	case fromScratch && st.Client.MaxConns > 0:
		return min(b, conc, st.Client.MaxConns)
	case fromScratch:
		return min(b, conc)
	}
	return 0
}

// listenWait is what the server's listen queue and accept delay add.
func listenWait(st scenario.Settings) time.Duration {
	n := max(st.Load.Requests, 0)
	conc := concurrencyOf(st.Load, n)
	if q := st.Server.Backlog; q > 0 && conc > q+1 && n > q+1 {
		// A burst larger than the listen queue waits for SYN retries (1 s and up), up to
		// the client's timeout, while the server accepts the rest.
		wait := 3 * time.Second
		if t := st.Client.Timeout.D(); t > 0 {
			wait = min(wait, t)
		}
		return max(wait, time.Duration(min(n, conc))*st.Server.AcceptDelay.D())
	}
	return time.Duration(min(n, conc)) * st.Server.AcceptDelay.D()
}

// slowStartRounds returns how many more windows than one n bytes need from a window of
// w bytes that doubles per round trip, and the window after them.
func slowStartRounds(n, w int) (int, int) {
	rounds := 0
	for n -= w; n > 0; n -= w {
		w *= 2
		rounds++
	}
	return rounds, w
}

// pools reports whether the client keeps connections for reuse at all: keepalive on, and no
// Keep-Alive hint that it turns into an idle time of zero or less (Node's agent with
// timeout=1 and a 1 s buffer).
func pools(st scenario.Settings) bool {
	if !st.Client.KeepAlive {
		return false
	}
	if shape.HTTP2(st) || !st.Client.HonorHint {
		return true
	}
	var hint time.Duration
	switch st.Server.KeepaliveHint.Mode {
	case scenario.HintOn:
		hint = st.Server.IdleTimeout.D()
	case scenario.HintDuration:
		hint = st.Server.KeepaliveHint.Duration.D()
	default:
		return true
	}
	secs := time.Duration(math.Floor(hint.Seconds())) * time.Second
	return hint == 0 || secs-st.Client.HintBuffer.D() > 0
}

// effectiveIdle is how long an idle connection survives: the shorter of the server's and
// the client's idle timeouts; 0 when neither closes one.
func effectiveIdle(st scenario.Settings) time.Duration {
	s, c := st.Server.IdleTimeout.D(), st.Client.IdleTimeout.D()
	if st.Balancer != nil {
		s = st.Balancer.IdleTimeout.D() // the client's connections end at the balancer
	}
	switch {
	case s == 0:
		return c
	case c == 0:
		return s
	}
	return min(s, c)
}
