package realserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/loopback"
)

// serve answers every request on ln with h until the test ends.
func serve(t *testing.T, ln net.Listener, h http.HandlerFunc) {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// The probe never follows a redirect: a server.url on 127.0.0.1 that redirects to
// 127.0.0.2 (another loopback address, so nothing leaves the machine) is reported, and
// the redirect's target receives nothing.
func TestProbeFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	other, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("this system has no loopback alias 127.0.0.2 (%v)", err)
	}
	var hits atomic.Int64
	serve(t, other, func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) })
	target := "http://" + other.Addr().String() + "/elsewhere"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, http.StatusFound) })
	s, err := Start(context.Background(), Config{Kind: URL, URL: "http://" + ln.Addr().String() + "/"})
	if err == nil {
		s.Close()
		t.Fatal("a redirecting server.url was accepted")
	}
	if !strings.Contains(err.Error(), "302 Found with a redirect to \""+target+"\"") || !strings.Contains(err.Error(), "follows no redirect") {
		t.Errorf("error %q does not report the redirect", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests; the probe must not follow it", n)
	}
}

// A URL off loopback is refused without AllowRemote before anything is dialled: by
// Check and Start, and by the probe's own dialer (192.0.2.1 is TEST-NET-1, never
// reached: the refusal comes back at once, not as a connect timeout).
func TestRemoteRefusedBeforeDialing(t *testing.T) {
	t.Parallel()
	cfg := Config{Kind: URL, URL: "http://192.0.2.1/"}
	if err := Check(cfg); err == nil || !strings.Contains(err.Error(), "is not on loopback") {
		t.Errorf("Check: %v", err)
	}
	start := time.Now()
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "is not on loopback") {
		t.Errorf("Start: %v", err)
	}
	s := &Server{cfg: cfg.normalized(), addr: "192.0.2.1:80", serverName: "x"}
	if err := s.probe(context.Background()); !errors.Is(err, loopback.ErrNotLoopback) {
		t.Errorf("probe: %v; want the loopback refusal", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing took %v: something was dialled", d)
	}
}
