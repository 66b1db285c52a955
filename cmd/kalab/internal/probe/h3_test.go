package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/h3"
	"github.com/kalab-dev/kalab/engine/server"
)

// startH3 starts kalab's embedded HTTP/3 server (quic-go) on loopback UDP with cfg and, in
// front of it, a plain HTTP/1.1 server (not under test) whose responses advertise it with
// Alt-Svc, as a site does; it returns the HTTP/1.1 URL and the options to trust the
// certificate.
func startH3(t *testing.T, cfg h3.ServerConfig) (string, Options) {
	t.Helper()
	cert, pool, err := server.NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cert = cert
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := h3.StartServer(pc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	port := srv.Addr().(*net.UDPAddr).Port
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Alt-Svc", fmt.Sprintf(`h3=":%d"; ma=86400`, port))
	}), IdleTimeout: time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/", Options{RootCAs: pool, ServerName: "localhost", MaxIdle: 4 * time.Second, MaxRequests: 10}
}

// TestH3: the HTTP/3 alternative Alt-Svc names is reached over QUIC; its max_idle_timeout
// is read from its transport parameters exactly as configured (a parameter, so exact in real
// time), and a resumed connection's 0-RTT is accepted only when the server allows it.
func TestH3(t *testing.T) {
	t.Parallel()
	for _, zero := range []bool{false, true} {
		url, o := startH3(t, h3.ServerConfig{IdleTimeout: 10 * time.Second, ZeroRTT: zero})
		o.URL = url
		r, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		h := r.H3
		if !h.Reached || !h.MaxIdleSent || h.MaxIdle != 10*time.Second || !h.ZeroRTTTried || h.ZeroRTT != zero {
			t.Errorf("0-RTT allowed %v: HTTP/3 %+v; want reached, max_idle_timeout 10s, a resumed connection with 0-RTT %v", zero, h, zero)
		}
	}
}

// TestAltSvc: the h3 alternative is the first entry whose protocol is exactly h3, with the
// origin's host when its authority names none.
func TestAltSvc(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`h3=":443"; ma=86400`:                      "example.test:443",
		`h3-29=":8443", h3="alt.test:9443"; ma=60`: "alt.test:9443",
		`h2=":443"`: "",
		`clear`:     "",
		`h3=":x:y"`: "",
	} {
		if got := altSvcH3(in, "example.test"); got != want {
			t.Errorf("altSvcH3(%q) = %q; want %q", in, got, want)
		}
	}
}
