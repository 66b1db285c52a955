package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleTolerance is the bar for the idle close, measured from the client.
const idleTolerance = 20 * time.Millisecond

func TestIdleCloseIsExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"plain-700ms", Config{IdleTimeout: 700 * time.Millisecond, BodyBytes: 200}},
		{"plain-2s", Config{IdleTimeout: 2 * time.Second, BodyBytes: 200}},
		{"tls13-700ms", Config{TLS: true, IdleTimeout: 700 * time.Millisecond, BodyBytes: 200}},
		{"tls12-1250ms", Config{TLS: true, TLSVersion: tls.VersionTLS12, IdleTimeout: 1250 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, tc.cfg)
			// A loaded 2-core machine can delay the client's own wake-up by tens of
			// milliseconds, so one of up to three attempts must land in the window; a
			// systematic error (rounding to seconds, Node's extra second) fails all three.
			var misses []time.Duration
			for attempt := 1; attempt <= 3; attempt++ {
				rc := dialRaw(t, s)
				// Two requests: the clock must restart from the last response, not the first.
				rc.mustDo(t, "")
				time.Sleep(tc.cfg.IdleTimeout / 2)
				_, _, last := rc.mustDo(t, "")
				closed := rc.waitEOF(t, tc.cfg.IdleTimeout+5*time.Second)
				got := closed.Sub(last)
				eventually(t, "the idle close counted", func() bool {
					st := s.Stats()
					return st.IdleCloses == int64(attempt) && st.Open == 0
				})
				if diff := got - tc.cfg.IdleTimeout; diff >= -idleTolerance && diff <= idleTolerance {
					if len(misses) > 0 {
						t.Logf("attempt %d: %v; earlier attempts off the window: %v", attempt, got, misses)
					}
					return
				}
				misses = append(misses, got)
			}
			t.Errorf("idle close after %v in three attempts, want %v ±%v", misses, tc.cfg.IdleTimeout, idleTolerance)
		})
	}
}

func TestIdleTimeoutZeroNeverCloses(t *testing.T) {
	t.Parallel()
	s := start(t, Config{})
	rc := dialRaw(t, s)
	rc.mustDo(t, "")
	// Nothing may arrive within a second; a timeout error is the expected outcome.
	rc.c.SetReadDeadline(time.Now().Add(1200 * time.Millisecond))
	var b [1]byte
	if n, err := rc.br.Read(b[:]); n != 0 || !isTimeout(err) {
		t.Fatalf("idle connection ended: n=%d err=%v", n, err)
	}
	if _, _, _, err := rc.do(""); err != nil {
		t.Fatalf("reusing the connection after 1.2 s idle: %v", err)
	}
	if st := s.Stats(); st.IdleCloses != 0 || st.Connections != 1 || st.Requests != 2 {
		t.Errorf("stats = %+v, want 1 connection, 2 requests, no idle close", st)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestClientCloseIsNotAnIdleClose(t *testing.T) {
	t.Parallel()
	s := start(t, Config{IdleTimeout: 2 * time.Second})
	rc := dialRaw(t, s)
	rc.mustDo(t, "")
	rc.c.Close()
	eventually(t, "the connection retired", func() bool { return s.Stats().Open == 0 })
	if st := s.Stats(); st.IdleCloses != 0 {
		t.Errorf("IdleCloses = %d after the client closed, want 0", st.IdleCloses)
	}
}

func TestKeepAliveHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cfg       Config
		reqHeader string
		wantHint  string // "" = header absent
		wantConn  string
	}{
		{"off", Config{IdleTimeout: 5 * time.Second}, "", "", ""},
		{"on-5s", Config{IdleTimeout: 5 * time.Second, Hint: HintOn}, "", "timeout=5", ""},
		{"on-floor-1999ms", Config{IdleTimeout: 1999 * time.Millisecond, Hint: HintOn}, "", "timeout=1", ""},
		{"on-floor-700ms", Config{IdleTimeout: 700 * time.Millisecond, Hint: HintOn}, "", "timeout=0", ""},
		{"on-never-closes", Config{Hint: HintOn}, "", "", ""},
		{"on-max", Config{IdleTimeout: 5 * time.Second, Hint: HintOn, MaxRequests: 10}, "", "timeout=5, max=10", ""},
		{"duration", Config{IdleTimeout: 6 * time.Second, Hint: HintDuration, HintDuration: 5500 * time.Millisecond}, "", "timeout=5", ""},
		{"duration-max", Config{Hint: HintDuration, HintDuration: 3 * time.Second, MaxRequests: 7}, "", "timeout=3, max=7", ""},
		{"raw", Config{Hint: HintRaw, HintRaw: "max=100, timeout=5", MaxRequests: 9}, "", "max=100, timeout=5", ""},
		{"only-if-asked-asked", Config{IdleTimeout: 5 * time.Second, Hint: HintOn, HintOnlyIfAsked: true, MaxRequests: 100},
			"Connection: Keep-Alive\r\n", "timeout=5, max=100", "Keep-Alive"},
		{"only-if-asked-silent", Config{IdleTimeout: 5 * time.Second, Hint: HintOn, HintOnlyIfAsked: true, MaxRequests: 100}, "", "", ""},
		{"client-close-no-hint", Config{IdleTimeout: 5 * time.Second, Hint: HintOn}, "Connection: close\r\n", "", "close"},
		{"node-preset", Config{IdleTimeout: 6 * time.Second, Hint: HintDuration, HintDuration: 5 * time.Second} /* the node preset */, "", "timeout=5", ""},
		{"apache-preset", Config{IdleTimeout: 5 * time.Second, Hint: HintOn, HintOnlyIfAsked: true, HintCountdown: true, MaxRequests: 101} /* the apache preset */, "Connection: keep-alive\r\n", "timeout=5, max=100", "Keep-Alive"},
		{"nginx-preset", Config{IdleTimeout: 75 * time.Second, Hint: HintOff, MaxRequests: 1000} /* the nginx preset */, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, tc.cfg)
			rc := dialRaw(t, s)
			resp, _, _ := rc.mustDo(t, tc.reqHeader)
			if got := resp.Header.Values("Keep-Alive"); tc.wantHint == "" && len(got) != 0 || tc.wantHint != "" && (len(got) != 1 || got[0] != tc.wantHint) {
				t.Errorf("Keep-Alive = %q, want %q", got, tc.wantHint)
			}
			got := resp.Header.Get("Connection")
			if resp.Close { // ReadResponse moves "Connection: close" into resp.Close
				got = "close"
			}
			if got != tc.wantConn {
				t.Errorf("Connection = %q, want %q", got, tc.wantConn)
			}
		})
	}
}

// Apache counts max= down: MaxKeepAliveRequests 100 gives max=100 on the first response,
// max=1 on the hundredth and Connection: close on the hundred-and-first. Node repeats
// maxRequestsPerSocket unchanged (the "on-max" case above).
func TestHintCountdown(t *testing.T) {
	t.Parallel()
	s := start(t, Config{IdleTimeout: 5 * time.Second, Hint: HintOn, HintOnlyIfAsked: true, HintCountdown: true, MaxRequests: 101})
	rc := dialRaw(t, s)
	for i := 1; i <= 101; i++ {
		resp, _, _ := rc.mustDo(t, "Connection: keep-alive\r\n")
		want := fmt.Sprintf("timeout=5, max=%d", 101-i)
		if i == 101 {
			want = ""
		}
		if got := resp.Header.Get("Keep-Alive"); got != want || resp.Close != (i == 101) {
			t.Fatalf("response %d: Keep-Alive %q close %v; want %q close %v", i, got, resp.Close, want, i == 101)
		}
	}
}

func TestMaxRequestsClosesAfterLast(t *testing.T) {
	t.Parallel()
	s := start(t, Config{MaxRequests: 3, Hint: HintOn, IdleTimeout: 5 * time.Second})
	rc := dialRaw(t, s)
	for i := 1; i <= 3; i++ {
		resp, _, _ := rc.mustDo(t, "")
		wantClose := i == 3
		if got := resp.Close; got != wantClose {
			t.Errorf("response %d: Connection: close = %v, want %v", i, got, wantClose)
		}
		if wantClose && resp.Header.Get("Keep-Alive") != "" {
			t.Errorf("response %d: closing response carries a hint %q", i, resp.Header.Get("Keep-Alive"))
		}
		if !wantClose && resp.Header.Get("Keep-Alive") != "timeout=5, max=3" {
			t.Errorf("response %d: Keep-Alive = %q", i, resp.Header.Get("Keep-Alive"))
		}
	}
	rc.waitEOF(t, 5*time.Second)
	eventually(t, "connection retired", func() bool { return s.Stats().Open == 0 })
	st := s.Stats()
	if st.Requests != 3 || st.MaxRequestsOnOneConn != 3 || st.ServerCloses != 1 || st.IdleCloses != 0 || st.RequestsPerConn[3] != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestCloseEvery(t *testing.T) {
	t.Parallel()
	s := start(t, Config{CloseEvery: 3})
	var closes []int
	rc := dialRaw(t, s)
	for i := 1; i <= 7; i++ {
		resp, _, _ := rc.mustDo(t, "")
		if resp.Close {
			closes = append(closes, i)
			rc.waitEOF(t, 5*time.Second)
			rc = dialRaw(t, s)
		}
	}
	if fmt.Sprint(closes) != "[3 6]" {
		t.Errorf("Connection: close on responses %v, want [3 6]", closes)
	}
	if st := s.Stats(); st.ServerCloses != 2 || st.Connections != 3 {
		t.Errorf("stats = %+v, want 2 server closes over 3 connections", st)
	}
}

func TestBodyStatusAndDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg Config
	}{
		{Config{}},
		{Config{BodyBytes: 200}},
		{Config{BodyBytes: 1 << 20, Status: 503}},
		{Config{BodyBytes: 10, Status: 404, TLS: true}},
		{Config{Status: 204}},
		{Config{BodyBytes: 3, Delay: 150 * time.Millisecond}},
	} {
		t.Run(fmt.Sprintf("%d-bytes-%d-%v-tls%v", tc.cfg.BodyBytes, tc.cfg.Status, tc.cfg.Delay, tc.cfg.TLS), func(t *testing.T) {
			t.Parallel()
			s := start(t, tc.cfg)
			rc := dialRaw(t, s)
			// Read the raw stream to EOF so the count is bytes written, not Content-Length.
			t0 := time.Now()
			rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: kalab\r\nConnection: close\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(rc.br)
			elapsed := time.Since(t0)
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			head, body, ok := strings.Cut(string(raw), "\r\n\r\n")
			if !ok {
				t.Fatalf("no header terminator in %q", raw)
			}
			if len(body) != tc.cfg.BodyBytes {
				t.Errorf("body bytes on the wire = %d, want %d", len(body), tc.cfg.BodyBytes)
			}
			want := tc.cfg.Status
			if want == 0 {
				want = 200
			}
			if !strings.HasPrefix(head, fmt.Sprintf("HTTP/1.1 %d ", want)) {
				t.Errorf("status line %q, want %d", strings.SplitN(head, "\r\n", 2)[0], want)
			}
			if elapsed < tc.cfg.Delay {
				t.Errorf("response after %v, want at least the %v delay", elapsed, tc.cfg.Delay)
			}
		})
	}
}

func TestHTTP2ManyStreamsOneConnection(t *testing.T) {
	t.Parallel()
	for _, tlsOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("tls=%v", tlsOn), func(t *testing.T) {
			t.Parallel()
			s := start(t, Config{TLS: tlsOn, HTTP2: true, BodyBytes: 200, Delay: 20 * time.Millisecond})
			tr := &http.Transport{}
			scheme := "http"
			if tlsOn {
				scheme = "https"
				tr.TLSClientConfig = &tls.Config{RootCAs: s.RootCAs(), ServerName: s.ServerName()}
				tr.ForceAttemptHTTP2 = true
			} else {
				var p http.Protocols
				p.SetUnencryptedHTTP2(true)
				tr.Protocols = &p
			}
			defer tr.CloseIdleConnections()
			cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			// Open the connection first so all 100 streams share it.
			get(t, cl, scheme+"://"+s.Addr()+"/")
			const n = 100
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for range n {
				wg.Go(func() {
					resp, err := cl.Get(scheme + "://" + s.Addr() + "/")
					if err != nil {
						errs <- err
						return
					}
					defer resp.Body.Close()
					b, err := io.ReadAll(resp.Body)
					if err == nil && (resp.ProtoMajor != 2 || len(b) != 200) {
						err = fmt.Errorf("proto %s, %d body bytes", resp.Proto, len(b))
					}
					if err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st := s.Stats()
			if st.Connections != 1 || st.H2Streams != n+1 || st.Requests != n+1 || st.MaxRequestsOnOneConn != n+1 {
				t.Errorf("stats = %+v, want 1 connection carrying %d streams", st, n+1)
			}
		})
	}
}

func get(t testing.TB, cl *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestHTTP2IdleCloseCounted(t *testing.T) {
	t.Parallel()
	s := start(t, Config{HTTP2: true, IdleTimeout: 400 * time.Millisecond})
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	resp := get(t, &http.Client{Transport: tr, Timeout: 5 * time.Second}, "http://"+s.Addr()+"/")
	if resp.ProtoMajor != 2 {
		t.Fatalf("proto %s, want HTTP/2", resp.Proto)
	}
	// The close takes the idle timer (400 ms), a GOAWAY, the client's close or net/http's
	// one-second grace, and the ConnState hooks: about 1.4 s on an idle machine. CI once
	// saw it take more than 5 s beside the other packages' tests, so the wait is long;
	// what is checked is that it is closed and counted as an idle close, not when.
	eventuallyWithin(t, 20*time.Second, "the idle h2 connection closed and counted", func() bool {
		st := s.Stats()
		return st.Open == 0 && st.IdleCloses == 1
	})
	if st := s.Stats(); st.Connections != 1 {
		t.Errorf("%d connections, want 1", st.Connections)
	}
}

func TestHTTP1StillServedWhenHTTP2On(t *testing.T) {
	t.Parallel()
	s := start(t, Config{TLS: true, HTTP2: true})
	rc := dialRaw(t, s) // offers no ALPN, so it must get HTTP/1.1
	resp, _, _ := rc.mustDo(t, "")
	if resp.ProtoMajor != 1 {
		t.Errorf("proto %s, want HTTP/1.1", resp.Proto)
	}
	if st := s.Stats(); st.H2Streams != 0 {
		t.Errorf("H2Streams = %d, want 0", st.H2Streams)
	}
}

func TestTLSResumptionCounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version     uint16
		tickets     bool
		wantResumed int64
	}{
		{tls.VersionTLS13, true, 1},
		{tls.VersionTLS13, false, 0},
		{tls.VersionTLS12, true, 1},
		{tls.VersionTLS12, false, 0},
	} {
		t.Run(fmt.Sprintf("%s-tickets=%v", tls.VersionName(tc.version), tc.tickets), func(t *testing.T) {
			t.Parallel()
			s := start(t, Config{TLS: true, TLSVersion: tc.version, SessionTickets: tc.tickets})
			cache := tls.NewLRUClientSessionCache(4)
			var resumed []bool
			for range 2 {
				c, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: s.RootCAs(), ServerName: s.ServerName(), ClientSessionCache: cache})
				if err != nil {
					t.Fatalf("tls dial: %v", err)
				}
				rc := &rawClient{c: c, br: newReader(c)}
				// A request makes the client read the TLS 1.3 ticket sent after the handshake.
				rc.mustDo(t, "Connection: close\r\n")
				cs := c.ConnectionState()
				if cs.Version != tc.version {
					t.Errorf("negotiated %s, want %s", tls.VersionName(cs.Version), tls.VersionName(tc.version))
				}
				resumed = append(resumed, cs.DidResume)
				c.Close()
			}
			if resumed[0] || resumed[1] != (tc.wantResumed == 1) {
				t.Errorf("client saw resumptions %v", resumed)
			}
			if st := s.Stats(); st.TLSHandshakes != 2 || st.TLSResumed != tc.wantResumed {
				t.Errorf("TLSHandshakes=%d TLSResumed=%d, want 2 and %d", st.TLSHandshakes, st.TLSResumed, tc.wantResumed)
			}
		})
	}
}

func TestCountersExactUnder100Clients(t *testing.T) {
	t.Parallel()
	s := start(t, Config{BodyBytes: 200, TLS: true, SessionTickets: true})
	const clients, perClient = 100, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	conns := make([]*rawClient, clients)
	for i := range clients {
		wg.Go(func() {
			rc := dialRaw(t, s)
			conns[i] = rc
			for range perClient {
				if _, _, _, err := rc.do(""); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range failures {
		t.Error(err)
	}
	st := s.Stats()
	if st.Connections != clients || st.Open != clients || st.Requests != clients*perClient ||
		st.MaxRequestsOnOneConn != perClient || st.RequestsPerConn[perClient] != clients || len(st.RequestsPerConn) != 1 ||
		st.TLSHandshakes != clients {
		t.Errorf("while open: stats = %+v", st)
	}
	for _, rc := range conns {
		rc.c.Close()
	}
	eventually(t, "all connections retired", func() bool { return s.Stats().Open == 0 })
	st = s.Stats()
	if st.Connections != clients || st.Requests != clients*perClient || st.RequestsPerConn[perClient] != clients || st.IdleCloses != 0 {
		t.Errorf("after close: stats = %+v", st)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"all-interfaces", Config{Listen: ":0"}},
		{"zero-address", Config{Listen: "0.0.0.0:0"}},
		{"private-address", Config{Listen: "10.1.2.3:0"}},
		{"hostname", Config{Listen: "example.com:0"}},
		{"no-port", Config{Listen: "127.0.0.1"}},
		{"bad-port", Config{Listen: "127.0.0.1:99999"}},
		{"status-1xx", Config{Status: 101}},
		{"status-too-big", Config{Status: 600}},
		{"negative-body", Config{BodyBytes: -1}},
		{"body-on-204", Config{Status: 204, BodyBytes: 1}},
		{"tls-1.1", Config{TLS: true, TLSVersion: tls.VersionTLS11}},
		{"negative-idle", Config{IdleTimeout: -time.Second}},
		{"negative-delay", Config{Delay: -time.Second}},
		{"hint-crlf", Config{Hint: HintRaw, HintRaw: "timeout=5\r\nX-Evil: 1"}},
		{"hint-unknown", Config{Hint: HintMode(9)}},
		{"negative-max", Config{MaxRequests: -1}},
		{"negative-close-every", Config{CloseEvery: -2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(tc.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("Start(%+v) succeeded, want an error", tc.cfg)
			}
			if !strings.HasPrefix(err.Error(), "starting server: ") {
				t.Errorf("error %q does not say what was being done", err)
			}
		})
	}
	if _, err := Start(Config{Listen: "0.0.0.0:0"}); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("non-loopback error %v is not ErrNotLoopback", err)
	}
}

func TestListenOnOtherLoopback(t *testing.T) {
	t.Parallel()
	s := start(t, Config{Listen: "127.0.0.2:0"})
	if !strings.HasPrefix(s.Addr(), "127.0.0.2:") {
		t.Fatalf("Addr = %s", s.Addr())
	}
	dialRaw(t, s).mustDo(t, "")
}

func TestCloseWithActiveAndIdleConnections(t *testing.T) {
	t.Parallel()
	s, err := Start(Config{TLS: true, HTTP2: true, Delay: 10 * time.Second, IdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	idle := dialRaw(t, s) // connected, handshaken, never sends
	_ = idle
	inflight := dialRaw(t, s)
	go inflight.do("") // blocked in the 10 s delay when Close runs
	eventually(t, "the request reached the handler", func() bool { return s.Stats().Requests == 1 })
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return within 5 s")
	}
	if st := s.Stats(); st.Open != 0 {
		t.Errorf("Open = %d after Close", st.Open)
	}
	if time.Since(t0) > 2*time.Second {
		t.Errorf("Close took %v with a request in flight; it must not wait for the delay", time.Since(t0))
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A Go client opens another connection when a burst exceeds the streams the server allows,
// so the stream limit decides whether an HTTP/2 burst shares one connection.
func TestHTTP2StreamLimitSpreadsABurst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ limit, minConns, maxConns int64 }{{4, 3, 20}, {1000, 1, 1}} {
		t.Run(fmt.Sprintf("limit=%d", tc.limit), func(t *testing.T) {
			t.Parallel()
			s := start(t, Config{HTTP2: true, MaxConcurrentStreams: int(tc.limit), Delay: 200 * time.Millisecond})
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			tr := &http.Transport{Protocols: &p}
			defer tr.CloseIdleConnections()
			cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			get(t, cl, "http://"+s.Addr()+"/") // one connection, limit known to the client
			var wg sync.WaitGroup
			for range 12 {
				wg.Go(func() { get(t, cl, "http://"+s.Addr()+"/") })
			}
			wg.Wait()
			if c := s.Stats().Connections; c < tc.minConns || c > tc.maxConns {
				t.Errorf("%d connections for 12 concurrent streams with a limit of %d; want %d..%d", c, tc.limit, tc.minConns, tc.maxConns)
			}
		})
	}
}
