package probe

import (
	"context"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/middlebox"
	"github.com/kalab-dev/kalab/engine/netsim"
	"github.com/kalab-dev/kalab/engine/server"
	"github.com/kalab-dev/kalab/engine/vnet"
)

// These tests run the probe against kalab's embedded server over the in-memory network on
// the virtual clock: every time is exact, so every figure is asserted exactly.

// virtualProbe starts the embedded server with cfg (behind a middlebox when box is set)
// on n and probes it with o.
func virtualProbe(t *testing.T, cfg server.Config, box *middlebox.Config, o Options) *Result {
	t.Helper()
	return virtualProbeLink(t, cfg, box, 0, o)
}

// virtualProbeLink is virtualProbe with kalab's link of the round trip rtt in front of
// the server (and box): the probe dials through the link's simulated handshake.
func virtualProbeLink(t *testing.T, cfg server.Config, box *middlebox.Config, rtt time.Duration, o Options) *Result {
	t.Helper()
	n := vnet.New()
	t.Cleanup(func() { n.Close() })
	ln, err := n.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	srv, err := server.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	if box != nil {
		bl, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		box.Upstream, box.Listener, box.Dial = addr, bl, n.DialContext
		b, err := middlebox.Start(*box)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		addr = b.Addr()
	}
	o.Dial = n.DialContext
	if rtt > 0 {
		link, err := netsim.StartVirtual(netsim.Config{Upstream: addr, RTT: rtt}, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { link.Close() })
		addr, o.Dial = link.Addr(), link.DialContext
	}
	_, port, _ := net.SplitHostPort(addr)
	scheme := "http"
	if cfg.TLS {
		scheme = "https"
		o.RootCAs, o.ServerName = srv.RootCAs(), srv.ServerName()
	}
	o.URL = scheme + "://127.0.0.1:" + port + "/"
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestVirtualFIN: a 7 s idle close by FIN is seen as it arrives, at exactly 7 s, on the five
// connections of the first round whose gaps (7.5 s, 15 s ... 120 s) outlast it; the three
// shorter ones (0.9375 s, 1.875 s, 3.75 s) send their second request. nginx-like: no hint,
// Connection: close on the 50th response.
func TestVirtualFIN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := virtualProbe(t, server.Config{IdleTimeout: 7 * time.Second, MaxRequests: 50}, nil, Options{})
		want := Idle{Found: true, Low: 7 * time.Second, High: 7 * time.Second, Kind: KindFIN, Seen: 5, Rounds: 1}
		if r.Idle != want {
			t.Errorf("idle %+v; want %+v", r.Idle, want)
		}
		if r.Requests != (Requests{Found: true, Max: 50, Sent: 50, How: "response 50 said Connection: close"}) {
			t.Errorf("requests %+v; want max 50 by Connection: close", r.Requests)
		}
		// 1 first + 8 trials + 1 counting requests; 1 + 8 + 3 second requests + 50.
		if r.Hint.Raw != "" || r.Proto != "HTTP/1.1" || r.Conns != 10 || r.Sent != 62 || r.RTT != 0 {
			t.Errorf("hint %q proto %q conns %d sent %d rtt %s; want none, HTTP/1.1, 10, 62, 0", r.Hint.Raw, r.Proto, r.Conns, r.Sent, r.RTT)
		}
		// The round's eight connections open 10 ms apart (connectPace): the last sees its FIN
		// at 70 ms + 7 s.
		if safe, _ := r.SafeClientIdle(); safe != 6999*time.Millisecond || r.Elapsed != 7070*time.Millisecond {
			t.Errorf("safe client idle %s, elapsed %s; want 6.999s (below 7 s, in whole ms), 7.07s", safe, r.Elapsed)
		}
	})
}

// TestVirtualHintTLS: over TLS 1.3 with h2 offered, a hint of timeout=5 for a 7 s close
// understates it; timeout=7 matches a close at 7 s or 7.05 s (within the 100 ms
// resolution) and understates one at 7.5 s; 9 s overstates it; the second and later TLS
// connections resume; over HTTP/2 the stream limit and the GOAWAY at the idle timeout are
// read.
func TestVirtualHintTLS(t *testing.T) {
	for _, c := range []struct {
		idle, hint time.Duration
		want       string
	}{{7 * time.Second, 5 * time.Second, "understates"}, {7 * time.Second, 7 * time.Second, "matches"},
		{7050 * time.Millisecond, 7 * time.Second, "matches"}, {7500 * time.Millisecond, 7 * time.Second, "understates"},
		{7 * time.Second, 9 * time.Second, "overstates"}} {
		synctest.Test(t, func(t *testing.T) {
			cfg := server.Config{TLS: true, HTTP2: true, SessionTickets: true, MaxConcurrentStreams: 77,
				IdleTimeout: c.idle, Hint: server.HintDuration, HintDuration: c.hint}
			r := virtualProbe(t, cfg, nil, Options{})
			if r.Hint.Timeout != c.hint || r.HintVerdict() != c.want {
				t.Errorf("hint %+v: %q; want timeout %s, %s", r.Hint, r.HintVerdict(), c.hint, c.want)
			}
			if r.TLSVersion != "TLS 1.3" || !r.H2.Offered || r.H2.MaxStreams != 77 || r.TLSConns != 12 || r.Resumed != 11 {
				t.Errorf("TLS %q h2 %v streams %d resumed %d of %d; want TLS 1.3, h2, 77, 11 of 12", r.TLSVersion, r.H2.Offered, r.H2.MaxStreams, r.Resumed, r.TLSConns)
			}
			// Go's HTTP/2 server sends GOAWAY at its IdleTimeout and closes 1 s later
			// (goAwayTimeout, net/http h2_bundle.go).
			if want := (H2{Offered: true, MaxStreams: 77, Found: true, GoAway: c.idle, Close: c.idle + time.Second, Kind: KindFIN}); r.H2 != want {
				t.Errorf("HTTP/2 %+v; want %+v", r.H2, want)
			}
			// Go's HTTP/2 server has no per-connection stream limit: 100 streams, no GOAWAY.
			if r.H2Streams != (H2Streams{Sent: 100}) {
				t.Errorf("HTTP/2 streams %+v; want 100 answered without a GOAWAY", r.H2Streams)
			}
		})
	}
}

// TestVirtualSilentDrop: a server that never closes, behind a box that forgets flows idle
// for 3 s and drops what comes after (on the virtual clock its 30 ms polls fall on 3 s
// exactly). Round 1's ladder (62.5 ms .. 8 s) brackets the drop in (2 s, 4 s]; round 2
// spreads 8 gaps over it and brackets (2.888 s, 3.111 s]; round 3 narrows to
// (2.988 s, 3.012 s], 24.7 ms wide, below the 100 ms resolution. Each failed gap is a
// timeout of the next request.
func TestVirtualSilentDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := &middlebox.Config{IdleTimeout: 3 * time.Second, Action: middlebox.Drop}
		r := virtualProbe(t, server.Config{}, box, Options{MaxIdle: 8 * time.Second, RequestTimeout: time.Second})
		step2 := 2 * time.Second / 9
		lo2 := 2*time.Second + 4*step2
		step3 := step2 / 9
		want := Idle{Found: true, Low: lo2 + 4*step3, High: lo2 + 5*step3, Kind: Silent, Next: KindTimeout, Rounds: 3}
		if r.Idle != want {
			t.Errorf("idle %+v; want %+v", r.Idle, want)
		}
		if !strings.Contains(r.idleText(), "silent drop after about 3.012s") {
			t.Errorf("idle text %q", r.idleText())
		}
	})
}

// TestVirtualReset: a box that resets both ends when a flow expires: the RST is seen on
// the idle connections at 3 s exactly (the box's poll at 3 s), on the round's two longest
// gaps (4 s and 8 s).
func TestVirtualReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := &middlebox.Config{IdleTimeout: 3 * time.Second, Action: middlebox.Reset, ResetAt: middlebox.AtExpiry, ResetTo: middlebox.Both}
		r := virtualProbe(t, server.Config{}, box, Options{MaxIdle: 8 * time.Second})
		want := Idle{Found: true, Low: 3 * time.Second, High: 3 * time.Second, Kind: KindRST, Seen: 2, Rounds: 1}
		if r.Idle != want {
			t.Errorf("idle %+v; want %+v", r.Idle, want)
		}
	})
}

// TestVirtualBudgets: a close beyond the longest gap is "above" it, never a number; a
// request budget below the server's limit is "above" it; a connection budget spent
// spent after the first round (10: the first request, the request count's connection and
// round 1's 8) leaves the bracket that round reached, marked as limited.
func TestVirtualBudgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := virtualProbe(t, server.Config{IdleTimeout: 7 * time.Second, MaxRequests: 50}, nil, Options{MaxIdle: 5 * time.Second, MaxRequests: 20})
		if r.Idle != (Idle{Above: 5 * time.Second, Rounds: 1}) {
			t.Errorf("idle %+v; want not found, above 5s", r.Idle)
		}
		if r.Requests != (Requests{Sent: 20}) || !strings.Contains(r.requestsText(), "above 20") {
			t.Errorf("requests %+v (%s); want not seen, above 20", r.Requests, r.requestsText())
		}
		if !strings.Contains(r.idleText(), "above 5s") {
			t.Errorf("idle text %q", r.idleText())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		box := &middlebox.Config{IdleTimeout: 3 * time.Second, Action: middlebox.Drop}
		r := virtualProbe(t, server.Config{}, box, Options{MaxIdle: 8 * time.Second, RequestTimeout: time.Second, MaxConns: 10})
		if !r.Idle.Found || r.Idle.Limited != errConnBudget.Error() || r.Idle.Low != 2*time.Second || r.Idle.High != 4*time.Second {
			t.Errorf("idle %+v; want the round-1 bracket (2s, 4s], limited by the connection budget", r.Idle)
		}
	})
}

// TestVirtualCloseEveryResponse: a server whose every response says Connection: close
// has no idle connection to time: the probe says so and sends nothing more.
func TestVirtualCloseEveryResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := virtualProbe(t, server.Config{MaxRequests: 1, IdleTimeout: time.Second}, nil, Options{})
		if r.Idle != (Idle{}) || r.Requests.Max != 1 || r.Conns != 1 || r.Sent != 1 || !strings.Contains(r.idleText(), "closes the connection after every response") {
			t.Errorf("idle %+v (%s), requests %+v, %d connections, %d requests; want none to time, max 1, 1 and 1", r.Idle, r.idleText(), r.Requests, r.Conns, r.Sent)
		}
	})
}

// TestVirtualLink: behind kalab's link with a 40 ms round trip, a request on a warm
// connection takes one round trip while the connect itself returns at once (the virtual
// link charges the handshake to the first bytes, as a proxy that accepts for the server
// does): the RTT is the larger, 40 ms. The server's 3 s close still reads as 3 s (its FIN
// crosses the same half round trip as the response before it).
func TestVirtualLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := virtualProbeLink(t, server.Config{IdleTimeout: 3 * time.Second, MaxRequests: 20}, nil, 40*time.Millisecond, Options{})
		if r.ConnectRTT != 0 || r.RequestRTT != 40*time.Millisecond || r.RTT != 40*time.Millisecond {
			t.Errorf("RTT %s (connect %s, warm request %s); want 40ms (0s, 40ms)", r.RTT, r.ConnectRTT, r.RequestRTT)
		}
		want := Idle{Found: true, Low: 3 * time.Second, High: 3 * time.Second, Kind: KindFIN, Seen: 6, Rounds: 1}
		if r.Idle != want {
			t.Errorf("idle %+v; want %+v", r.Idle, want)
		}
		if safe, _ := r.SafeClientIdle(); safe != 2959*time.Millisecond {
			t.Errorf("safe client idle %s; want 2.959s (below 3 s − 40 ms, in whole ms)", safe)
		}
	})
}

// TestVirtualWrite: the printed findings of a 7 s FIN close, and the note on an error status.
func TestVirtualWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := virtualProbe(t, server.Config{IdleTimeout: 7 * time.Second, MaxRequests: 50, Status: 404}, nil, Options{})
		var b strings.Builder
		r.Write(&b)
		for _, want := range []string{
			"  response:     404, HTTP/1.1\n                (an error status: what follows is how the server treats this error response",
			"  idle close:   7s idle, closed by FIN (seen as it arrived on 5 idle connections)\n",
			"  hint:         none (no Keep-Alive header)\n",
			"  requests:     max 50 per connection (response 50 said Connection: close)\n",
			"  HTTP/3:       not advertised (no Alt-Svc header)\n",
			"  client rule:  a client idle timeout of 6.999s or less is safe (below close 7s − RTT 0s)",
			"  spent: 10 connections, 62 requests, 7.07s\n",
		} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("the findings lack %q:\n%s", want, b.String())
			}
		}
	})
}

// TestVirtualNoConnections: a connection budget spent before any idle connection could
// open measures nothing, and says so rather than "above 0s".
func TestVirtualNoConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := virtualProbe(t, server.Config{IdleTimeout: 7 * time.Second}, nil, Options{MaxConns: 1, MaxRequests: 5})
		if r.Idle.Found || r.Idle.Above != 0 || r.idleText() != "not measured: connection budget spent" {
			t.Errorf("idle %+v (%s); want not measured: connection budget spent", r.Idle, r.idleText())
		}
	})
}
