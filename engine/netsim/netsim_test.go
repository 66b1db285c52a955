package netsim

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartRejectsBadConfig(t *testing.T) {
	t.Parallel()
	up := "127.0.0.1:9"
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"all interfaces", Config{Upstream: up, Listen: "0.0.0.0:0"}, "not a loopback"},
		{"empty host", Config{Upstream: up, Listen: ":0"}, "not a loopback"},
		{"private address", Config{Upstream: up, Listen: "10.0.0.1:0"}, "not a loopback"},
		{"hostname", Config{Upstream: up, Listen: "example.com:0"}, "not a loopback"},
		{"no port", Config{Upstream: up, Listen: "127.0.0.1"}, "listen address"},
		{"remote upstream", Config{Upstream: "192.0.2.1:80"}, "upstream"},
		{"empty upstream", Config{}, "upstream"},
		{"negative rtt", Config{Upstream: up, RTT: -time.Millisecond}, "negative"},
		{"negative jitter", Config{Upstream: up, Jitter: -time.Millisecond}, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(tc.cfg)
			if err == nil {
				_ = p.Close()
				t.Fatalf("Start(%+v) succeeded, want error", tc.cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestStartAcceptsLoopbackForms(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"", "127.0.0.1:0", "localhost:0", "127.0.0.2:0", "[::1]:0"} {
		p, err := Start(Config{Upstream: "localhost:9", Listen: listen})
		if err != nil {
			if listen == "[::1]:0" && strings.Contains(err.Error(), "listening") {
				continue // no IPv6 loopback on this machine
			}
			t.Fatalf("Start(listen %q): %v", listen, err)
		}
		host, _, _ := net.SplitHostPort(p.Addr())
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("listen %q bound %s, not loopback", listen, p.Addr())
		}
		_ = p.Close()
	}
}

// slack is the upper timing margin: on a loaded 2-core machine a goroutine
// can wake this late. Timing tests use an RTT of at least 240 ms so the
// slack stays under RTT/2 and 1, 2 and 3 RTT remain distinct. Lower bounds
// have no slack: the proxy must never deliver early.
const slack = 100 * time.Millisecond

// roundTripSlack is what TestRoundTripCosts allows a request through the proxy beyond its
// modeled cost and the same request made straight to the server alongside it (which
// carries what this machine takes for the request's own work: its CPU, its scheduling,
// a TLS handshake). It must stay below 60 ms, what two one-way trips each 30 ms late add
// to a reused request, so that a link that late fails the test
// (TestRoundTripCostsCatchALateLink).
const roundTripSlack = 35 * time.Millisecond

// roundTripCase is one of the three costs everything else rests on.
type roundTripCase struct {
	name      string
	tls       bool
	keepAlive bool
	rtts      float64
}

var roundTripCases = []roundTripCase{
	{"reused", false, true, 1},
	{"new tcp", false, false, 2},
	{"new tls13", true, false, 3},
}

// roundTrip is a case measured: requests through the proxy and, just before each, the
// same request straight to the server (a new connection when the case opens one).
type roundTrip struct {
	want    time.Duration
	proxied []time.Duration
	direct  []time.Duration
	// late is how late the proxy's own timers fired: it is what is under test, so it
	// never widens the bound; the message shows it.
	late time.Duration
}

// check judges a measured case: no request faster than modeled, and the median no slower
// than modeled plus the median direct request plus roundTripSlack.
func (r roundTrip) check() error {
	for i, d := range r.proxied {
		if d < r.want {
			return fmt.Errorf("request %d took %v, faster than the modeled %v", i, d, r.want)
		}
	}
	got, direct := median(r.proxied), median(r.direct)
	if hi := r.want + direct + roundTripSlack; got > hi {
		return fmt.Errorf("median request %v, want at most %v: the modeled %v, plus %v (the median of the same request straight to the server, alongside), plus %v; the proxy recorded its timers up to %v late",
			got, hi, r.want, direct, roundTripSlack, r.late)
	}
	return nil
}

// measureRoundTrip runs a case through a proxy at rtt, with hold injected as lateness into
// every chunk the link delivers (0: none), and returns the measurement and the proxy.
func measureRoundTrip(t *testing.T, tc roundTripCase, rtt, hold time.Duration) (first, r roundTrip, p *Proxy) {
	addr, pool := httpServer(t, tc.tls)
	p = startProxy(t, addr, rtt)
	c, straight := httpClient(t, pool, tc.keepAlive), httpClient(t, pool, tc.keepAlive)
	scheme := "http"
	if tc.tls {
		scheme = "https"
	}
	// Warm up straight to the server so one-time costs (the race detector's first pass
	// over crypto) do not land in a sample.
	get(t, httpClient(t, pool, false), scheme, addr)
	p.cfg.Lag.Hold(hold)
	if tc.keepAlive {
		// The first request opens the connection (2 RTT); later ones reuse it.
		first = roundTrip{want: 2 * rtt, direct: []time.Duration{get(t, straight, scheme, addr)}}
		first.proxied = []time.Duration{get(t, c, scheme, p.Addr())}
		first.late = p.cfg.Lag.Summary().Max
	}
	r.want = time.Duration(tc.rtts * float64(rtt))
	for range 5 {
		r.direct = append(r.direct, get(t, straight, scheme, addr))
		r.proxied = append(r.proxied, get(t, c, scheme, p.Addr()))
	}
	r.late = p.cfg.Lag.Summary().Max
	return first, r, p
}

// TestRoundTripCosts checks the three costs everything else rests on, each bounded by the
// same request made straight to the server alongside, never by the proxy's own account of
// its lateness. It runs before the parallel tests: a TLS handshake under the race detector
// costs tens of milliseconds of CPU, and the 10 MB transfer running beside it on two cores
// would add that again.
func TestRoundTripCosts(t *testing.T) {
	const rtt = 240 * time.Millisecond
	for _, tc := range roundTripCases {
		t.Run(tc.name, func(t *testing.T) {
			first, r, p := measureRoundTrip(t, tc, rtt, 0)
			if tc.keepAlive {
				if err := first.check(); err != nil {
					t.Errorf("first request: %v", err)
				}
			}
			if err := r.check(); err != nil {
				t.Error(err)
			}
			t.Logf("through the proxy %v, straight %v; the link's timers up to %v late", r.proxied, r.direct, r.late)
			st := p.Stats()
			wantConns := int64(len(r.proxied))
			if tc.keepAlive {
				wantConns = 1
			}
			if st.Accepted != wantConns {
				t.Errorf("Accepted = %d, want %d", st.Accepted, wantConns)
			}
			if st.BytesUp == 0 || st.BytesDown == 0 {
				t.Errorf("bytes not counted: %+v", st)
			}
		})
	}
}

// TestRoundTripCostsCatchALateLink: with every chunk the link delivers made 30 ms late on
// purpose, TestRoundTripCosts' check fails for a reused request (two late trips, +60 ms),
// whatever the proxy recorded about its own lateness.
func TestRoundTripCostsCatchALateLink(t *testing.T) {
	const rtt = 240 * time.Millisecond
	_, r, _ := measureRoundTrip(t, roundTripCases[0], rtt, 30*time.Millisecond)
	err := r.check()
	if err == nil {
		t.Fatalf("a link 30 ms late per chunk passed: through the proxy %v, straight %v, modeled %v", r.proxied, r.direct, r.want)
	}
	t.Logf("caught: %v", err)
}

// TestFINDelayed: the server's close reaches the client as EOF RTT/2 later.
func TestFINDelayed(t *testing.T) {
	t.Parallel()
	const rtt = 240 * time.Millisecond
	closed := make(chan time.Time, 1)
	addr := tcpServer(t, func(c *net.TCPConn) {
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		_, _ = c.Write([]byte("bye"))
		closed <- time.Now()
		_ = c.Close()
	})
	p := startProxy(t, addr, rtt)
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	eof := time.Now()
	if err != nil {
		t.Fatalf("read: %v (want data then EOF)", err)
	}
	if string(got) != "bye" {
		t.Errorf("read %q, want the data sent before the FIN", got)
	}
	withinTrips(t, p, "EOF after server close", eof.Sub(<-closed), rtt/2, rtt/2+slack, 1)
	// The client's own close then travels up; both directions finish.
	_ = c.Close()
	waitFor(t, "link torn down", func() bool { return p.Stats().Open == 0 })
}

// TestHalfCloseFromClient: a client FIN reaches the server as EOF and the
// server can still answer on the other half.
func TestHalfCloseFromClient(t *testing.T) {
	t.Parallel()
	const rtt = 240 * time.Millisecond
	p := startProxy(t, tcpServer(t, echo), rtt)
	start := time.Now() // before dialing: the proxy may accept before Dial returns
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(got) != "hello" {
		t.Errorf("echo = %q", got)
	}
	// New connection: data and FIN leave at 1.5 RTT, echo and FIN return at 2.
	withinTrips(t, p, "echo and EOF", time.Since(start), 2*rtt, 2*rtt+slack, 4)
	waitFor(t, "link torn down", func() bool { return p.Stats().Open == 0 })
}

// TestResetDelayed: a server reset reaches the client as ECONNRESET, RTT/2
// after it happened, and after the data sent before it.
func TestResetDelayed(t *testing.T) {
	t.Parallel()
	const rtt = 240 * time.Millisecond
	reset := make(chan time.Time, 1)
	addr := tcpServer(t, func(c *net.TCPConn) {
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		_, _ = c.Write([]byte("partial"))
		time.Sleep(20 * time.Millisecond) // let the data leave before the RST
		_ = c.SetLinger(0)
		reset <- time.Now()
		_ = c.Close()
	})
	p := startProxy(t, addr, rtt)
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	at := time.Now()
	if !isConnReset(err) {
		t.Fatalf("read error = %v, want ECONNRESET", err)
	}
	if string(got) != "partial" {
		t.Errorf("read %q before the reset, want %q", got, "partial")
	}
	withinTrips(t, p, "reset after server reset", at.Sub(<-reset), rtt/2, rtt/2+slack, 1)
	waitFor(t, "reset counted", func() bool {
		st := p.Stats()
		return st.ResetsDown == 1 && st.Open == 0
	})
}

// TestResetFromClient: a client reset reaches the server as a reset.
func TestResetFromClient(t *testing.T) {
	t.Parallel()
	const rtt = 240 * time.Millisecond
	type result struct {
		err error
		at  time.Time
	}
	res := make(chan result, 1)
	addr := tcpServer(t, func(c *net.TCPConn) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(c)
		res <- result{err, time.Now()}
	})
	p := startProxy(t, addr, rtt)
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * rtt) // the connection is established end to end
	_ = c.SetLinger(0)
	sent := time.Now()
	_ = c.Close()
	r := <-res
	if !isConnReset(r.err) {
		t.Fatalf("server read error = %v, want ECONNRESET", r.err)
	}
	withinTrips(t, p, "server sees reset", r.at.Sub(sent), rtt/2, rtt/2+slack, 1)
	waitFor(t, "reset counted", func() bool { return p.Stats().ResetsUp == 1 })
}

// TestUpstreamRefused: a refused upstream connect fails the client's connect when its
// simulated handshake ends (Handshake: ECONNREFUSED), and is a reset to a client that
// writes without waiting for it.
func TestUpstreamRefused(t *testing.T) {
	t.Parallel()
	const rtt = 240 * time.Millisecond
	p := startProxy(t, refusingAddr(t), rtt)
	start := time.Now()
	c := dial(t, p.Addr())
	if err := p.Handshake(t.Context(), start, c.LocalAddr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("handshake = %v, want ECONNREFUSED", err)
	}
	withinTrips(t, p, "refused connect", time.Since(start), rtt, rtt+slack, 1)
	// The reset reaches the socket at the refused connect's round trip. The kernel reports
	// it once, to the first call after it: the write when it came first (a loaded machine
	// runs this goroutine late), and the read then sees the end of the stream.
	_, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	if !isConnReset(err) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 10))
	}
	if !isConnReset(err) {
		t.Fatalf("write, then read error = %v, want ECONNRESET", err)
	}
	withinTrips(t, p, "reset after connect", time.Since(start), rtt, rtt+slack, 2)
	st := p.Stats()
	if st.ResetsDown != 1 || st.Accepted != 1 {
		t.Errorf("stats = %+v, want 1 accepted and 1 reset down", st)
	}
}

// TestStaleRace reproduces the stale-connection race: the server closes an
// idle connection at T; a request written at T-RTT/4 meets the close, one
// written at T-2RTT is answered.
func TestStaleRace(t *testing.T) {
	t.Parallel()
	const rtt = 400 * time.Millisecond
	for _, tc := range []struct {
		name   string
		before time.Duration // how long before T the request is written
		ok     bool
	}{
		{"inside window", rtt / 4, false},
		{"before window", 2 * rtt, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			closeAt := make(chan time.Time, 1)
			addr := tcpServer(t, func(c *net.TCPConn) {
				T := <-closeAt
				go func() {
					time.Sleep(time.Until(T))
					_ = c.Close()
				}()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte("re:" + line)); err != nil {
						return
					}
				}
			})
			p := startProxy(t, addr, rtt)
			c := dial(t, p.Addr())
			r := bufio.NewReader(c)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			// First request opens the connection (answered at 2 RTT).
			T := time.Now().Add(2*rtt + 3*rtt)
			closeAt <- T
			if _, err := c.Write([]byte("one\n")); err != nil {
				t.Fatal(err)
			}
			if line, err := r.ReadString('\n'); err != nil || line != "re:one\n" {
				t.Fatalf("first response %q, %v", line, err)
			}
			time.Sleep(time.Until(T.Add(-tc.before)))
			if _, err := c.Write([]byte("two\n")); err != nil {
				t.Fatalf("write: %v", err)
			}
			line, err := r.ReadString('\n')
			if tc.ok {
				if err != nil || line != "re:two\n" {
					t.Fatalf("second response %q, %v; want an answer", line, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("second request answered %q; want reset or EOF", line)
			}
			if !errors.Is(err, io.EOF) && !isConnReset(err) {
				t.Fatalf("second request error = %v, want reset or EOF", err)
			}
			// The server's kernel answers the late request with RST; the
			// proxy must carry it to the client behind the FIN.
			waitFor(t, "reset propagated", func() bool { return p.Stats().ResetsDown == 1 })
		})
	}
}

// TestSmallWritesInOrder sends 1,000 numbered writes through a jittery link
// and checks the echo comes back complete and in order.
func TestSmallWritesInOrder(t *testing.T) {
	t.Parallel()
	p, err := Start(Config{Upstream: tcpServer(t, echo), RTT: 20 * time.Millisecond,
		Jitter: 8 * time.Millisecond, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dial(t, p.Addr())
	const n = 1000
	errc := make(chan error, 1)
	go func() {
		b := make([]byte, 4)
		for i := range n {
			binary.BigEndian.PutUint32(b, uint32(i))
			if _, err := c.Write(b); err != nil {
				errc <- err
				return
			}
			if i%50 == 0 {
				time.Sleep(time.Millisecond) // spread writes so they are separate chunks
			}
		}
		errc <- c.CloseWrite()
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	if len(got) != 4*n {
		t.Fatalf("got %d bytes, want %d", len(got), 4*n)
	}
	for i := range n {
		if v := binary.BigEndian.Uint32(got[4*i:]); v != uint32(i) {
			t.Fatalf("value %d at position %d: reordered or corrupted", v, i)
		}
	}
}

// TestLargeTransferIntact moves 10 MB each way at once and compares hashes.
func TestLargeTransferIntact(t *testing.T) {
	t.Parallel()
	const size = 10 << 20
	payload := func(seed uint64) []byte {
		b := make([]byte, size)
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	up, down := payload(1), payload(2)
	serverGot := make(chan [32]byte, 1)
	addr := tcpServer(t, func(c *net.TCPConn) {
		go func() {
			_, _ = c.Write(down)
			_ = c.CloseWrite()
		}()
		h := sha256.New()
		_, _ = io.Copy(h, c)
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		serverGot <- sum
	})
	p := startProxy(t, addr, 10*time.Millisecond)
	c := dial(t, p.Addr())
	go func() {
		_, _ = c.Write(up)
		_ = c.CloseWrite()
	}()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	h := sha256.New()
	if _, err := io.Copy(h, c); err != nil {
		t.Fatalf("client read: %v", err)
	}
	if got, want := h.Sum(nil), sha256.Sum256(down); !bytes.Equal(got, want[:]) {
		t.Error("download corrupted: SHA-256 differs")
	}
	select {
	case got := <-serverGot:
		if got != sha256.Sum256(up) {
			t.Error("upload corrupted: SHA-256 differs")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server never finished reading")
	}
	st := p.Stats()
	if st.BytesUp != size || st.BytesDown != size {
		t.Errorf("bytes up/down = %d/%d, want %d each", st.BytesUp, st.BytesDown, size)
	}
}

// TestManyConnections holds several hundred links open at once; none is lost
// and the open/peak counters follow.
func TestManyConnections(t *testing.T) {
	t.Parallel()
	const n = 400
	p := startProxy(t, tcpServer(t, echo), 10*time.Millisecond)
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		conns[i] = dial(t, p.Addr())
		if _, err := conns[i].Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 1)
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, b); err != nil || b[0] != byte(i) {
			t.Fatalf("conn %d: got %v, %v", i, b, err)
		}
	}
	if st := p.Stats(); st.Accepted != n || st.Open != n || st.PeakOpen != n {
		t.Errorf("stats with all open = %+v, want %d accepted, open and peak", st, n)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	waitFor(t, "all links torn down", func() bool { return p.Stats().Open == 0 })
	if st := p.Stats(); st.PeakOpen != n {
		t.Errorf("PeakOpen = %d after close, want %d", st.PeakOpen, n)
	}
}

// TestCloseLeavesNoGoroutines runs alone (not parallel) so the goroutine
// census sees only this proxy.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	if got := proxyGoroutines(); got != 0 {
		t.Fatalf("%d proxy goroutines before the test", got)
	}
	const rtt = 400 * time.Millisecond
	addr := tcpServer(t, echo)
	p, err := Start(Config{Upstream: addr, RTT: rtt})
	if err != nil {
		t.Fatal(err)
	}
	// Idle links, links with data queued in both directions, and one whose
	// writer is blocked because its client never reads.
	for i := range 6 {
		c := dial(t, p.Addr())
		if i%2 == 1 {
			if _, err := c.Write(bytes.Repeat([]byte("q"), 1000)); err != nil {
				t.Fatal(err)
			}
		}
	}
	blocked := dial(t, p.Addr())
	_ = blocked.SetWriteBuffer(4096)
	go func() { _, _ = blocked.Write(make([]byte, 8<<20)) }() // echo fills the proxy's write to us
	time.Sleep(rtt*2 + rtt/2)
	c := dial(t, p.Addr())
	_, _ = c.Write([]byte("in flight"))
	time.Sleep(rtt / 4) // that chunk is queued, not yet due
	// Idle links hold no goroutine (their readers wait in the idle parker,
	// TestIdleLinksHoldNoGoroutine), so only the accept loop and the parker
	// are sure to be there.
	if got := proxyGoroutines(); got < 2 {
		t.Fatalf("%d proxy goroutines while busy, want at least 2 (census broken?)", got)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A goroutine that has called wg.Done may still be executing its
	// return; give those a moment, which a real leak would not use.
	deadline := time.Now().Add(time.Second)
	for proxyGoroutines() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := proxyGoroutines(); got != 0 {
		t.Errorf("%d proxy goroutines after Close:\n%s", got, stacks())
	}
	if st := p.Stats(); st.Open != 0 {
		t.Errorf("Open = %d after Close", st.Open)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("proxy still accepts after Close")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestJitterSeeded(t *testing.T) {
	t.Parallel()
	draw := func(seed int64) []time.Duration {
		p, err := Start(Config{Upstream: "127.0.0.1:9", RTT: 100 * time.Millisecond,
			Jitter: 10 * time.Millisecond, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		out := make([]time.Duration, 50)
		for i := range out {
			out[i] = p.oneWay()
			within(t, "one-way delay", out[i], 50*time.Millisecond, 60*time.Millisecond)
		}
		return out
	}
	a, b, c := draw(7), draw(7), draw(8)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("same seed gave different jitter")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds gave the same jitter")
	}
}

// TestJitterIsOneSidedUniform checks the jitter model of Config.Jitter on 20,000 draws:
// never below RTT/2 nor above RTT/2+Jitter, mean RTT/2+Jitter/2, and each quarter of the
// range drawn a quarter of the time (a chi-square test at 3 degrees of freedom, p = 0.001).
func TestJitterIsOneSidedUniform(t *testing.T) {
	t.Parallel()
	const half, j, n = 50 * time.Millisecond, 10 * time.Millisecond, 20000
	p, err := Start(Config{Upstream: "127.0.0.1:9", RTT: 2 * half, Jitter: j, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var sum float64
	var quarters [4]float64
	for range n {
		d := p.oneWay()
		if d < half || d > half+j {
			t.Fatalf("one-way delay %v outside [%v, %v]", d, half, half+j)
		}
		x := float64(d - half)
		sum += x
		quarters[min(int(4*x/float64(j)), 3)]++
	}
	if mean := sum / n; math.Abs(mean-float64(j)/2) > 0.02*float64(j) {
		t.Errorf("mean extra delay %v, want %v", time.Duration(mean), j/2)
	}
	chi := 0.0
	for _, q := range quarters {
		chi += (q - n/4) * (q - n/4) / (n / 4)
	}
	if chi > 16.27 {
		t.Errorf("quarters %v: chi-square %.1f > 16.27, not uniform", quarters, chi)
	}
}

// proxyGoroutines counts goroutines running the proxy's own code.
func proxyGoroutines() int {
	n := 0
	for _, g := range strings.Split(stacks(), "\n\n") {
		for _, fn := range []string{"netsim.(*Proxy).", "netsim.(*link).", "netsim.(*direction).", "kernel.(*Parker)."} {
			if strings.Contains(g, fn) {
				n++
				break
			}
		}
	}
	return n
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// waitFor polls cond for up to 5 s; the proxy's teardown is asynchronous.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
