package balancer

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/client"
	"github.com/kalab-dev/kalab/engine/testkit/testci"
)

// findProgram returns the real proxy's binary, on PATH or in /usr/sbin where Debian puts
// it: the comparison needs the real program.
func findProgram(t *testing.T, name string) string {
	t.Helper()
	return testci.Program(t, name, "/usr/sbin/"+name)
}

// startProgram runs a real proxy with a config written for it and waits for addr.
func startProgram(t *testing.T, args []string, dir, addr string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", args[0], err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("%s output: %s\nerror.log:\n%s", args[0], out, log)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %s", args[0], addr, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The haproxy preset's policy against real HAProxy: with its defaults (http-reuse safe,
// retry-on conn-failure) a new client connection's first request gets its own server
// connection, and when a reused server connection dies under a later request HAProxy
// closes the client connection without a response (HAProxy 2.6.12 measured; a first
// request whose fresh server connection dies gets a 502). Any other outcome fails: the
// preset allows no other (its rates are in its Source, engine/scenario/presets/presets.go).
func TestHAProxyPolicyMatchesRealHAProxy(t *testing.T) {
	t.Parallel()
	bin := findProgram(t, "haproxy")
	for _, tc := range []struct {
		method string
		fresh  bool
		want   string
	}{
		{"GET", false, "[200 200 200 0eof]"},
		{"POST", false, "[200 200 200 0eof]"},
		{"GET", true, "[200 200 502 200]"},
	} {
		method, fresh := tc.method, tc.fresh
		t.Run(fmt.Sprintf("%s/fresh=%v", method, fresh), func(t *testing.T) {
			t.Parallel()
			// Two client connections: the second's first request must not take the
			// first's idle server connection under reuse safe; its second request does
			// reuse, and that connection dies under it.
			outcome := func(addr string, be *backend) (statuses []string, conns int64) {
				for i := range 2 {
					c, err := client.New(client.Config{Addr: addr, Method: method, KeepAlive: true, Timeout: 5 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					for j := range 2 {
						ev := c.Do(context.Background(), 2*i+j)
						statuses = append(statuses, fmt.Sprintf("%d%s", ev.Status, ev.Class))
					}
					c.Close()
				}
				return statuses, be.conns.Load()
			}
			// After the first client connection's two requests, the server closes under
			// every reused request, whichever idle server connection HAProxy takes: with
			// "n == 2" only, HAProxy 2.6.12 sent the fourth request over the first client's
			// idle server connection (its third request) in 11 of 1,400 tries (2026-12-01),
			// no connection died, and the test once read that as a re-send. With fresh, it
			// closes under the first request of the second client connection's own server
			// connection instead, and under a second request on one.
			closeOn := func(n, k int64) bool { return n >= 2 && k > 2 }
			if fresh {
				closeOn = func(n, k int64) bool { return (n == 2 && k > 2) || (n == 1 && k == 3) }
			}

			realBE := startBackend(t, closeOn)
			dir, addr := t.TempDir(), freeAddr(t)
			conf := fmt.Sprintf(`global
  log stderr format raw local0 err
defaults
  mode http
  timeout connect 5s
  timeout client 10s
  timeout server 10s
  timeout http-keep-alive 10s
frontend fe
  bind %s
  default_backend be
backend be
  server s1 %s
`, addr, realBE.ln.Addr().String())
			cf := filepath.Join(dir, "haproxy.cfg")
			if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			startProgram(t, []string{bin, "-db", "-f", cf}, dir, addr)
			realStatuses, realConns := outcome(addr, realBE)

			ownBE := startBackend(t, closeOn)
			own := startBalancer(t, Config{OnError: PolicyClose, Reuse: ReuseSafe, IdleTimeout: 10 * time.Second,
				Backend: client.Config{Addr: ownBE.ln.Addr().String(), KeepAlive: true, LivenessCheck: true, Timeout: 5 * time.Second}})
			ownStatuses, ownConns := outcome(own.Addr(), ownBE)

			if got := fmt.Sprint(realStatuses); got != tc.want {
				t.Errorf("real HAProxy gave %v (the server saw %d requests on %d connections); the haproxy preset allows only %s",
					realStatuses, realBE.requests.Load(), realConns, tc.want)
			}
			// A re-send would reach the server a fifth time: the preset says HAProxy never
			// re-sends a request whose established server connection died.
			if n := realBE.requests.Load(); !fresh && n != 4 {
				t.Errorf("real HAProxy sent %d requests to the server for 4 (a re-send?); the haproxy preset never re-sends", n)
			}
			// Not modelled: after a first request's fresh server connection died, HAProxy
			// 2.6 opened another new one for the client connection's next request, where
			// the embedded balancer may reuse an idle one; so that case compares answers only.
			if fmt.Sprint(ownStatuses) != fmt.Sprint(realStatuses) || (!fresh && ownConns != realConns) {
				t.Errorf("%s: embedded balancer %v with %d server connections, real HAProxy %v with %d", method, ownStatuses, ownConns, realStatuses, realConns)
			}
		})
	}
}
