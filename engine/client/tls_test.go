package client

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// newTLSServer starts an httptest TLS server on loopback that speaks HTTP/1.1 only, or h2
// too when h2 is set, and returns it with a pool that trusts its certificate.
func newTLSServer(t *testing.T, h2 bool) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	srv.EnableHTTP2 = h2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func trust(srv *httptest.Server) Config {
	return Config{
		Addr:    srv.Listener.Addr().String(),
		TLS:     true,
		RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
	}
}

func TestTLSHandshakesAndResumption(t *testing.T) {
	t.Parallel()
	srv := newTLSServer(t, false)
	for _, impl := range []string{ImplModel, ImplGoNetHTTP} {
		for _, resume := range []bool{false, true} {
			for _, version := range []uint16{tls.VersionTLS12, 0} {
				cfg := trust(srv)
				cfg.Implementation, cfg.SessionResumption, cfg.TLSVersion = impl, resume, version
				c := mustNew(t, cfg) // KeepAlive false: a handshake per request
				for i := range 3 {
					ev := do(t, c, i)
					wantOK(t, ev)
					if ev.TLS <= 0 || ev.Connect <= 0 || ev.Reused {
						t.Fatalf("%s resume=%v: %+v, want a new connection with TLS and connect times", impl, resume, ev)
					}
				}
				st := c.Stats()
				if st.TLSHandshakes != 3 || st.Connections != 3 {
					t.Fatalf("%s resume=%v: %+v, want 3 connections and 3 handshakes", impl, resume, st)
				}
				if resume && st.TLSResumed < 1 || !resume && st.TLSResumed != 0 {
					t.Fatalf("%s resume=%v version=%#x: %d resumed handshakes", impl, resume, version, st.TLSResumed)
				}
			}
		}
	}
}

func TestTLSReuse(t *testing.T) {
	t.Parallel()
	srv := newTLSServer(t, false)
	cfg := trust(srv)
	cfg.KeepAlive = true
	c := mustNew(t, cfg)
	wantOK(t, do(t, c, 0))
	ev := do(t, c, 1)
	wantOK(t, ev)
	if !ev.Reused || ev.TLS != 0 || c.Stats().TLSHandshakes != 1 {
		t.Fatalf("%+v, %+v: want the second request on the first TLS connection", ev, c.Stats())
	}
}

func TestHTTP2SharesOneConnection(t *testing.T) {
	t.Parallel()
	tlsSrv := newTLSServer(t, true)

	h2c := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "want h2c", http.StatusBadRequest)
			return
		}
		io.WriteString(w, "hello")
	})}
	h2c.Protocols = new(http.Protocols)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go h2c.Serve(ln)
	t.Cleanup(func() { h2c.Close() })

	for name, cfg := range map[string]Config{"tls": trust(tlsSrv), "h2c": {Addr: ln.Addr().String()}} {
		cfg.HTTP2, cfg.KeepAlive = true, true
		c := mustNew(t, cfg)
		wantOK(t, do(t, c, 0)) // the connection exists before the burst
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Add(1)
			go func() { defer wg.Done(); wantOK(t, do(t, c, i+1)) }()
		}
		wg.Wait()
		if st := c.Stats(); st.H2Streams != 11 || st.Connections != 1 {
			t.Fatalf("%s: %+v, want 11 streams on 1 connection", name, st)
		}
	}
}
